import CoinMechModel

/// `spend`, `refund` and `cancel`: what became of a command on the customer's credit.
public struct CreditReply: OperatorReply {
    public enum State: String, Sendable {
        /// A sale approved: its amount is off the credit.
        case approved
        /// A sale refused, nothing recorded: the credit (`balanceMinor`) is short of it.
        case refused
        /// A sale put back: its amount is on the credit again.
        case refunded
        /// The credit paid back as change (`payout`); `keptMinor` no coins held could make stays.
        case returned
        /// Nothing paid back, and why (`reason`): the credit (`balanceMinor`) stays.
        case kept
    }

    public var requestID: String
    public var state: State
    public var currency: String
    /// The balance the command left (a return's: what it kept).
    public var balanceMinor: Int64
    /// A sale's or a refund's amount.
    public var amountMinor: Int64?
    public var item: String?
    /// The event that recorded it (approved, refunded).
    public var seq: Int64?
    /// Answered from the ledger: the request id was asked before.
    public var repeated: Bool?
    /// An approved sale asked again after it was put back: the refund's event. Vend nothing.
    public var refundedSeq: Int64?
    /// `refused`: `credit_short`; `kept`: why nothing was paid back.
    public var reason: String?
    /// `returned`: what no coins held could make, left as credit.
    public var keptMinor: Int64?
    /// `returned`: the payout's own reply.
    public var payout: PayoutReply?

    public init(requestID: String, state: State, currency: String, balanceMinor: Int64) {
        self.requestID = requestID
        self.state = state
        self.currency = currency
        self.balanceMinor = balanceMinor
    }

    public init(json: JSON) throws(ReplyError) {
        let f = try ReplyFields(json, "credit command")
        guard let state = State(rawValue: try f.string("state")) else {
            throw ReplyError("a credit command's state \(f.object["state"]!) is not one the protocol knows")
        }
        self.init(requestID: try f.string("request_id"), state: state, currency: try f.string("currency"), balanceMinor: try f.int("balance_minor"))
        amountMinor = try f.optionalInt("amount_minor")
        item = try f.optionalString("item")
        seq = try f.optionalInt("seq")
        repeated = f.object["repeated"]?.bool
        reason = try f.optionalString("reason")
        refundedSeq = try f.optionalInt("refunded_seq")
        keptMinor = try f.optionalInt("kept_minor")
        if let payout = f.object["payout"], payout != .null { self.payout = try PayoutReply(json: payout) }
    }

    public var json: JSON {
        var object: [String: JSON] = ["request_id": .string(requestID), "state": .string(state.rawValue), "currency": .string(currency),
                                      "balance_minor": .int(balanceMinor)]
        if let amountMinor { object["amount_minor"] = .int(amountMinor) }
        if let item { object["item"] = .string(item) }
        if let seq { object["seq"] = .int(seq) }
        if let repeated { object["repeated"] = .bool(repeated) }
        if let reason { object["reason"] = .string(reason) }
        if let refundedSeq { object["refunded_seq"] = .int(refundedSeq) }
        if let keptMinor { object["kept_minor"] = .int(keptMinor) }
        if let payout { object["payout"] = payout.json }
        return .object(object)
    }
}

/// `credit`: the customer's credit as the ledger holds it, one account per currency.
public struct CreditBalanceReply: OperatorReply {
    public struct Account: Sendable, Equatable {
        public var account: String
        public var currency: String
        public var balanceMinor: Int64
        /// The event that last moved it.
        public var movedSeq: Int64

        public init(account: String, currency: String, balanceMinor: Int64, movedSeq: Int64) {
            self.account = account
            self.currency = currency
            self.balanceMinor = balanceMinor
            self.movedSeq = movedSeq
        }

        public init(json: JSON) throws(ReplyError) {
            let f = try ReplyFields(json, "credit account")
            self.init(account: try f.string("account"), currency: try f.string("currency"), balanceMinor: try f.int("balance_minor"),
                      movedSeq: try f.int("moved_seq"))
        }

        public var json: JSON {
            ["account": .string(account), "currency": .string(currency), "balance_minor": .int(balanceMinor), "moved_seq": .int(movedSeq)]
        }
    }

    public var source: String
    public var accounts: [Account]

    public init(source: String, accounts: [Account]) {
        self.source = source
        self.accounts = accounts
    }

    public init(json: JSON) throws(ReplyError) {
        let f = try ReplyFields(json, "credit")
        var accounts: [Account] = []
        for account in try f.array("accounts") { accounts.append(try Account(json: account)) }
        self.init(source: try f.string("source"), accounts: accounts)
    }

    public var json: JSON { ["source": .string(source), "accounts": .array(accounts.map(\.json))] }
}
