import CoinMechModel

/// What the payout core is told. Like the deciding core it does no I/O and keeps no clock: its
/// shell reads the paying device, the ledger and the operators' commands, and hands them in.
public enum PayoutInput: Sendable {
    /// An operator asks for a payout, answered under `ticket`.
    case payout(PayoutRequest, ticket: Ticket)
    /// An operator's refill or count of a unit whose level the ledger keeps.
    case inventory(InventoryRequest, ticket: Ticket)
    /// What the device says of itself now, and the DISPENSEs it counted since the last turn,
    /// oldest first. Time passes with it: the stages' deadlines are checked.
    case device(PayingDeviceState, dispensed: [DispenseCount])
    /// The outcome of `.lookUp`.
    case lookedUp(Result<PayoutLookup, LedgerError>)
    /// The `.commit` was recorded.
    case committed(AppendResult)
    /// The `.commit` reported a failure. It may have landed all the same (the ledger's write
    /// returned an error after the transaction committed, or its outcome is not known): the core
    /// never takes it for "not written" until the ledger, read back, says so.
    case commitFailed(LedgerError)
    /// The outcome of `.dispense`: whether the device took the command.
    case dispenseSent(Bool)
    /// The outcome of `.askAccount`.
    case account(PayoutRestartAccount)
    /// The daemon stops: no new payout, no further step; the one under way is counted and settled.
    case stop
}

/// What the payout core asks its shell to do, in order. Those marked "step back" must have
/// their outcome stepped in before anything else; each is the last output of its step.
public enum PayoutOutput: Sendable, Equatable {
    /// Hold the device still for a payout (it takes no coin into what pays, its own buttons pay
    /// nothing), or let it go back to what the chain and the operator allow.
    case hold(Bool)
    /// Ask the device for a fresh count of its units.
    case count
    /// Ask the device to pay `count` coins of unit `type`; step back `.dispenseSent`.
    case dispense(type: Int, count: Int)
    /// Ask the device to pay `valueMinor` in coins it chooses (MDB level 3's alternative
    /// payout); step back `.dispenseSent`.
    case payValue(valueMinor: Int64)
    /// Ask the held device what it says of a payout left open; step back `.account`.
    case askAccount(PayoutRecord)
    /// Read what the ledger holds under `requestID` (and which of `moves` it counted); step
    /// back `.lookedUp`.
    case lookUp(requestID: String, moves: [InventoryChange])
    /// Record these entries in one transaction; step back `.committed` or `.commitFailed`.
    case commit([LedgerEntry])
    /// Hand recorded events to the clients.
    case publish([LedgerEvent])
    /// The outcome of an operator's command.
    case reply(Ticket, PayoutAnswer)
    /// Pass this failpoint (tests make the daemon die or stall there).
    case failpoint(Failpoint)
}

/// An operator's payout: pay `amountMinor` of `currency` (nil: the device's), once per
/// `requestID`.
public struct PayoutRequest: Sendable, Hashable {
    public var requestID: String
    public var amountMinor: Int64
    public var currency: String?
    /// Who asked (the peer's user name).
    public var by: String
    /// The customer's credit it pays back (`CreditCore`'s cancel), if any: journalled with the
    /// payout, which takes the amount off that credit.
    public var creditAccount: String?

    public init(requestID: String, amountMinor: Int64, currency: String?, by: String, creditAccount: String? = nil) {
        self.requestID = requestID
        self.amountMinor = amountMinor
        self.currency = currency
        self.by = by
        self.creditAccount = creditAccount
    }
}

/// An operator's refill (coins loaded) or float (coins counted) of a unit whose level the
/// ledger keeps, once per `requestID`.
public struct InventoryRequest: Sendable, Hashable {
    public enum Kind: Sendable, Hashable {
        case refill(coins: Int)
        case float(level: Int)
    }

    /// The unit's number, or its coin id.
    public var unit: String
    public var kind: Kind
    public var requestID: String
    public var by: String

    public init(unit: String, kind: Kind, requestID: String, by: String) {
        self.unit = unit
        self.kind = kind
        self.requestID = requestID
        self.by = by
    }
}

/// What the ledger holds under a request id, read for the core (`.lookUp`).
public struct PayoutLookup: Sendable, Hashable {
    /// The payout under the id, if any.
    public var payout: PayoutRecord?
    /// The operator's refill or float under the id, if any.
    public var operatorChange: OperatorInventoryRecord?
    /// Of the moves asked about, those the ledger has counted.
    public var counted: [InventoryChange]

    public init(payout: PayoutRecord?, operatorChange: OperatorInventoryRecord?, counted: [InventoryChange]) {
        self.payout = payout
        self.operatorChange = operatorChange
        self.counted = counted
    }
}

/// How an operator's money-out command ended; the daemon encodes it as the socket's reply.
public enum PayoutAnswer: Sendable, Equatable {
    /// A payout as it stands: settled, or still open (`record.settlement` nil). `repeated`: the
    /// request id was asked before, and this is the ledger's answer.
    case payout(PayoutRecord, coins: [Int: PayoutCoin], repeated: Bool)
    /// Nothing journalled, nothing moved: no set of the coins held makes the amount.
    case refused(PayoutOrder, nearestBelow: Int64, nearestAbove: Int64?)
    /// An operator's refill or float, as recorded. `repeated`: recorded by an earlier ask.
    case inventory(OperatorInventoryRecord, repeated: Bool)
    /// Nothing done (or nothing more): the daemon or the ledger cannot now; ask again.
    case unavailable(String)
    /// Nothing done: the request names nothing, or contradicts what its request id recorded.
    case badRequest(String)
}
