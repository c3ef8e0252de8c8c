/// One request line, read and checked: its JSON, its command and the command's arguments.
/// Pure (no ledger, no peer, no socket), so the daemon's handler and the fuzzer run the same
/// code. What it cannot know stays with the caller: whether the peer may use a control
/// command (checked before the arguments), and where a subscription starts by default (the
/// ledger's last seq, read before the arguments are checked).
public struct ClientRequest: Sendable, Equatable {
    /// A command with its arguments in range.
    public typealias Command = OperatorCommand

    /// Why a line is refused, with the request's `id` when it had one.
    public struct Failure: Error, Sendable, Equatable {
        public var id: JSON?
        public var code: ClientProtocol.ErrorCode
        public var message: String

        public init(id: JSON?, _ code: ClientProtocol.ErrorCode, _ message: String) {
            self.id = id
            self.code = code
            self.message = message
        }
    }

    /// The request's `id`, echoed in its reply (any JSON value).
    public var id: JSON?
    /// `cmd` as the client wrote it.
    public var name: String
    /// The command, or why its arguments (or its name) are wrong.
    public var command: Result<Command, Failure>

    /// Reads one line: a failure here (not JSON, not an object, no `cmd`) is answered at once.
    public static func parse(_ text: String) -> Result<ClientRequest, Failure> {
        guard let request = JSON.parse(text), let fields = request.object else {
            return .failure(Failure(id: nil, .badJSON, "not a JSON object"))
        }
        let id = fields["id"]
        guard let name = fields["cmd"]?.string else {
            return .failure(Failure(id: id, .badRequest, "missing \"cmd\" (a string)"))
        }
        return .success(ClientRequest(id: id, name: name, command: Result { () throws(Failure) in try command(name, fields, id: id) }))
    }

    static func command(_ name: String, _ fields: [String: JSON], id: JSON?) throws(Failure) -> Command {
        guard let known = OperatorCommand.Name(rawValue: name) else {
            let known = ClientProtocol.readCommands.union(ClientProtocol.controlCommands).sorted().joined(separator: ", ")
            throw Failure(id: id, .unknownCommand, "unknown command '\(name)' (known: \(known))")
        }
        switch known {
        case .status: return .status
        case .chain: return .chain
        case .totals: return .totals
        case .events:
            return .events(since: try integer(fields, "since", default: 0, range: 0...Int64.max, id: id),
                           limit: try integer(fields, "limit", default: 100, range: 1...1000, id: id))
        case .subscribe:
            // -1 (or no `since`) starts after the last event.
            let requested = try integer(fields, "since", default: -1, range: -1...Int64.max, id: id)
            let since: Int64? = requested >= 0 ? requested : nil
            guard let pending = fields["pending"].map({ $0 == .null ? false : $0.bool }) ?? false else {
                throw Failure(id: id, .badRequest, "\"pending\" must be true or false")
            }
            return .subscribe(since: since, pending: pending)
        case .inhibit:
            guard let on = fields["on"]?.bool else { throw Failure(id: id, .badRequest, "\"on\" must be true or false") }
            return .inhibit(on)
        case .collect: return .collect
        case .reload: return .reload
        case .teachStatus: return .teachStatus
        case .teachStart:
            guard let currency = fields["currency"]?.string, !currency.isEmpty else {
                throw Failure(id: id, .badRequest, "\"currency\" must be a currency code such as \"EUR\"")
            }
            guard let code = fields["code"]?.string, !code.isEmpty else {
                throw Failure(id: id, .badRequest, "\"code\" must be a denomination code such as \"EUR_50c\"")
            }
            let coins = try integer(fields, "coins", default: ClientProtocol.teachDefaultCoins, range: ClientProtocol.teachCoins, id: id)
            return .teachStart(currency: currency, code: code, coins: Int(coins))
        case .teachCommit: return .teachCommit
        case .teachAbort: return .teachAbort
        case .explain:
            func figure(_ key: String, required: Bool) throws(Failure) -> Double? {
                guard let field = fields[key], field != .null else {
                    if required { throw Failure(id: id, .badRequest, "\"\(key)\" must be a number of millimetres") }
                    return nil
                }
                guard let value = field.double, value.isFinite, value > 0, value < 1000 else {
                    throw Failure(id: id, .badRequest, "\"\(key)\" must be a positive number below 1000")
                }
                return value
            }
            return .explain(diameter: try figure("diameter", required: true)!, weight: try figure("weight", required: false),
                            thickness: try figure("thickness", required: false))
        case .payoutPlan:
            let (amount, currency) = try payoutAmount(fields, id: id)
            return .payoutPlan(amountMinor: amount, currency: currency)
        case .payout:
            let (amount, currency) = try payoutAmount(fields, id: id)
            guard let requestID = fields["request_id"]?.string, ClientProtocol.isRequestID(requestID) else {
                throw Failure(id: id, .badRequest, "\"request_id\" is required: 1 to 64 characters of A-Z a-z 0-9 . _ : -, unique per payout (a repeat is answered from the ledger, never paid again)")
            }
            return .payout(amountMinor: amount, currency: currency, requestID: requestID)
        case .refill, .float:
            let unit: String
            if let number = fields["unit"]?.int, number >= 0 {
                unit = "\(number)"
            } else if let text = fields["unit"]?.string, !text.isEmpty, text.count <= 16 {
                unit = text
            } else {
                throw Failure(id: id, .badRequest, "\"unit\" is required: the hopper's unit number (as `status` lists them) or its coin id, e.g. EU200A")
            }
            // One id, one action: without one a retry after a lost reply would count the coins again.
            guard let requestID = fields["request_id"]?.string, ClientProtocol.isRequestID(requestID) else {
                throw Failure(id: id, .badRequest, "\"request_id\" is required: 1 to 64 characters of A-Z a-z 0-9 . _ : -, unique per \(known.rawValue) (a repeat is answered from the ledger, never counted again)")
            }
            guard known == .refill else {
                guard fields["level"] != nil, fields["level"] != .null else {
                    throw Failure(id: id, .badRequest, "\"level\" is required: the coins counted in the hopper")
                }
                return .float(unit: unit, level: Int(try integer(fields, "level", default: 0, range: ClientProtocol.inventoryLevel, id: id)), requestID: requestID)
            }
            guard fields["coins"] != nil, fields["coins"] != .null else {
                throw Failure(id: id, .badRequest, "\"coins\" is required: the coins loaded into the hopper")
            }
            return .refill(unit: unit, coins: Int(try integer(fields, "coins", default: 0, range: ClientProtocol.inventoryCoins, id: id)), requestID: requestID)
        case .credit: return .credit
        case .spend:
            let (amount, currency) = try payoutAmount(fields, id: id, what: "a sale's price")
            var item: String?
            if let field = fields["item"], field != .null {
                guard let text = field.string, ClientProtocol.isItem(text) else {
                    throw Failure(id: id, .badRequest, "\"item\" must name what is sold in 1 to 64 bytes of printable text (no control characters)")
                }
                item = text
            }
            return .spend(amountMinor: amount, currency: currency, item: item, requestID: try requestID(fields, known, id: id))
        case .refund: return .refund(requestID: try requestID(fields, known, id: id))
        case .cancel: return .cancel(requestID: try requestID(fields, known, id: id))
        }
    }

    /// `request_id` (required) of the credit commands: one id names one sale, refund or return.
    static func requestID(_ fields: [String: JSON], _ name: OperatorCommand.Name, id: JSON?) throws(Failure) -> String {
        guard let requestID = fields["request_id"]?.string, ClientProtocol.isRequestID(requestID) else {
            let what = switch name {
            case .refund: "the request id of the sale to put back"
            case .cancel: "unique per return of the credit (a repeat is answered from the ledger, never paid again)"
            default: "unique per sale (a repeat is answered from the ledger, never charged again)"
            }
            throw Failure(id: id, .badRequest, "\"request_id\" is required: 1 to 64 characters of A-Z a-z 0-9 . _ : -, \(what)")
        }
        // The standing-credit rule's own ids: a client's under them could block the rule's.
        if let reserved = ClientProtocol.reservedCreditPrefixes.first(where: { requestID.hasPrefix($0) }) {
            throw Failure(id: id, .badRequest, "\"request_id\": ids beginning '\(reserved)' are the daemon's own (credit left standing); choose another")
        }
        return requestID
    }

    /// `amount_minor` (required) and `currency` (optional) of `payout_plan` and `payout`.
    static func payoutAmount(_ fields: [String: JSON], id: JSON?, what: String = "the amount") throws(Failure) -> (Int64, String?) {
        guard fields["amount_minor"] != nil, fields["amount_minor"] != .null else {
            throw Failure(id: id, .badRequest, "\"amount_minor\" is required: \(what) in the currency's smallest unit, e.g. 35 for 0.35")
        }
        let amount = try integer(fields, "amount_minor", default: 0, range: ClientProtocol.payoutAmount, id: id)
        var currency: String?
        if let field = fields["currency"], field != .null {
            guard let code = field.string, code.count == 3, code.allSatisfy({ $0.isASCII && $0.isUppercase }) else {
                throw Failure(id: id, .badRequest, "\"currency\" must be an ISO 4217 code such as \"USD\"")
            }
            currency = code
        }
        return (amount, currency)
    }

    static func integer(_ fields: [String: JSON], _ key: String, default value: Int64, range: ClosedRange<Int64>, id: JSON?) throws(Failure) -> Int64 {
        guard let field = fields[key], field != .null else { return value }
        guard let number = field.int, range.contains(number) else {
            throw Failure(id: id, .badRequest, "\"\(key)\" must be a whole number from \(range.lowerBound) to \(range.upperBound)")
        }
        return number
    }
}
