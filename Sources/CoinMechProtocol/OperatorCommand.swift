/// A command of the socket API, typed (docs/PROTOCOL.md): what a client asks and the daemon
/// runs. `ClientRequest.parse` reads one off a line; `request(id:)` writes one. Its wire names
/// and argument keys are here and nowhere else, so coinctl, the daemon, the tests and the fleet
/// bridge speak the same commands.
public enum OperatorCommand: Sendable, Equatable {
    case status
    case chain
    case totals
    /// `since` ≥ 0, `limit` 1…1000.
    case events(since: Int64, limit: Int64)
    /// `since` ≥ 0, or nil for "from the last event" (no `since`, or -1).
    case subscribe(since: Int64?, pending: Bool)
    case inhibit(Bool)
    case collect
    case reload
    case teachStatus
    /// `coins` within `ClientProtocol.teachCoins`.
    case teachStart(currency: String, code: String, coins: Int)
    case teachCommit
    case teachAbort
    /// How the running chain's links would judge a reading: figures finite and positive
    /// (mm, g, mm), weight and thickness optional. Nothing is decided or recorded.
    case explain(diameter: Double, weight: Double?, thickness: Double?)
    /// How an MDB changer would pay `amountMinor` (within `ClientProtocol.payoutAmount`) of
    /// `currency` (nil: the changer's) from its tubes, or the nearest amounts it can pay.
    /// Nothing moves.
    case payoutPlan(amountMinor: Int64, currency: String?)
    /// Pay `amountMinor` of `currency` (nil: the changer's) from the changer's tubes, once per
    /// `requestID` (`ClientProtocol.isRequestID`): journalled before any coin moves; a repeated
    /// request id is answered from the ledger.
    case payout(amountMinor: Int64, currency: String?, requestID: String)
    /// An operator loaded `coins` (within `ClientProtocol.inventoryCoins`) into the payout
    /// unit `unit` (a hopper's index, or its coin id): its level on the ledger rises. Once per
    /// `requestID` (`ClientProtocol.isRequestID`), as `payout`: a repeat is answered from the
    /// ledger, so a retry after a lost reply does not count the coins twice.
    case refill(unit: String, coins: Int, requestID: String)
    /// An operator counted the payout unit `unit` at `level` coins (a float): the ledger's
    /// level is set to it. Once per `requestID`, as `refill`: a retry after a payout moved the
    /// level does not set it back to the old count.
    case float(unit: String, level: Int, requestID: String)
    /// The customer's credit as the ledger holds it: the source's accounts, one per currency.
    case credit
    /// Approve a sale of `amountMinor` (within `ClientProtocol.payoutAmount`) from the
    /// customer's credit, once per `requestID`; `item` names what is sold; `currency` (nil:
    /// the credit's only one). A sale beyond the credit is refused with the balance.
    case spend(amountMinor: Int64, currency: String?, item: String?, requestID: String)
    /// Put back the sale approved under `requestID`: it failed after approval.
    case refund(requestID: String)
    /// Pay the customer's credit back as change (the escrow return), once per `requestID`.
    case cancel(requestID: String)

    /// A command's `cmd`, and whether it needs control permission.
    public enum Name: String, Sendable, CaseIterable {
        case status, chain, totals, events, subscribe, inhibit, collect, reload
        case teachStatus = "teach_status"
        case teachStart = "teach_start"
        case teachCommit = "teach_commit"
        case teachAbort = "teach_abort"
        case explain
        case payoutPlan = "payout_plan"
        case payout
        case refill
        case float
        case credit, spend, refund, cancel

        /// Changes state (or could): the peer must be a control user or group.
        public var isControl: Bool {
            switch self {
            case .inhibit, .collect, .reload, .teachStart, .teachCommit, .teachAbort, .payout, .refill, .float, .spend, .refund, .cancel: true
            case .status, .chain, .totals, .events, .subscribe, .teachStatus, .explain, .payoutPlan, .credit: false
            }
        }
    }

    public var name: Name {
        switch self {
        case .status: .status
        case .chain: .chain
        case .totals: .totals
        case .events: .events
        case .subscribe: .subscribe
        case .inhibit: .inhibit
        case .collect: .collect
        case .reload: .reload
        case .teachStatus: .teachStatus
        case .teachStart: .teachStart
        case .teachCommit: .teachCommit
        case .teachAbort: .teachAbort
        case .explain: .explain
        case .payoutPlan: .payoutPlan
        case .payout: .payout
        case .refill: .refill
        case .float: .float
        case .credit: .credit
        case .spend: .spend
        case .refund: .refund
        case .cancel: .cancel
        }
    }

    /// Its arguments as the request carries them (absent optional ones left out).
    public var arguments: [String: JSON] {
        switch self {
        case .status, .chain, .totals, .collect, .reload, .teachStatus, .teachCommit, .teachAbort, .credit:
            return [:]
        case .events(let since, let limit):
            return ["since": .int(since), "limit": .int(limit)]
        case .subscribe(let since, let pending):
            var fields: [String: JSON] = ["pending": .bool(pending)]
            if let since { fields["since"] = .int(since) }
            return fields
        case .inhibit(let on):
            return ["on": .bool(on)]
        case .teachStart(let currency, let code, let coins):
            return ["currency": .string(currency), "code": .string(code), "coins": .int(Int64(coins))]
        case .explain(let diameter, let weight, let thickness):
            var fields: [String: JSON] = ["diameter": .double(diameter)]
            if let weight { fields["weight"] = .double(weight) }
            if let thickness { fields["thickness"] = .double(thickness) }
            return fields
        case .payoutPlan(let amount, let currency):
            var fields: [String: JSON] = ["amount_minor": .int(amount)]
            if let currency { fields["currency"] = .string(currency) }
            return fields
        case .payout(let amount, let currency, let requestID):
            var fields: [String: JSON] = ["amount_minor": .int(amount), "request_id": .string(requestID)]
            if let currency { fields["currency"] = .string(currency) }
            return fields
        case .refill(let unit, let coins, let requestID):
            return ["unit": .string(unit), "coins": .int(Int64(coins)), "request_id": .string(requestID)]
        case .float(let unit, let level, let requestID):
            return ["unit": .string(unit), "level": .int(Int64(level)), "request_id": .string(requestID)]
        case .spend(let amount, let currency, let item, let requestID):
            var fields: [String: JSON] = ["amount_minor": .int(amount), "request_id": .string(requestID)]
            if let currency { fields["currency"] = .string(currency) }
            if let item { fields["item"] = .string(item) }
            return fields
        case .refund(let requestID), .cancel(let requestID):
            return ["request_id": .string(requestID)]
        }
    }

    /// The request line's object: `cmd`, `id` and the arguments.
    public func request(id: JSON) -> JSON {
        var fields = arguments
        fields["cmd"] = .string(name.rawValue)
        fields["id"] = id
        return .object(fields)
    }
}
