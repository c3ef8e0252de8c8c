import CoinMechModel

/// What the credit core is told. It does no I/O and keeps no clock, as the payout core: its
/// shell reads the ledger and the sale application's commands and hands them in.
public enum CreditInput: Sendable {
    /// The sale application's command, answered under `ticket`.
    case command(CreditCommand, ticket: Ticket)
    /// The outcome of `.lookUp`.
    case lookedUp(Result<CreditLookup, LedgerError>)
    /// The `.commit` was recorded.
    case committed(AppendResult)
    /// The `.commit` reported a failure; it may have landed all the same, so the core reads the
    /// ledger back before it answers.
    case commitFailed(LedgerError)
    /// The payout core's answer to the `.payout` asked for a cancel.
    case payoutAnswered(PayoutAnswer)
    /// Time passes: a start whose accounts were not written is tried again, and credit left
    /// standing is looked for.
    case tick
}

/// What the credit core asks its shell to do, in order. Those marked "step back" must have
/// their outcome stepped in before any other input but a command.
public enum CreditOutput: Sendable, Equatable {
    /// Read the source's accounts and what the ledger holds under `requestID`; step back
    /// `.lookedUp`.
    case lookUp(requestID: String)
    /// Record these entries in one transaction; step back `.committed` or `.commitFailed`.
    case commit([LedgerEntry])
    /// Ask the payout core for this payout (a cancel: the credit paid back as change); step
    /// back `.payoutAnswered` once it answers.
    case payout(PayoutRequest)
    /// Hand recorded events to the clients.
    case publish([LedgerEvent])
    /// The outcome of a command.
    case reply(Ticket, CreditAnswer)
}

/// A sale application's command on the customer's credit.
public enum CreditCommand: Sendable, Hashable {
    /// Approve a sale of `amountMinor` (in `currency`, nil: the credit's only one), once per
    /// `requestID`; `item` names what is sold.
    case spend(requestID: String, amountMinor: Int64, currency: String?, item: String?, by: String)
    /// Put back the sale approved under `requestID` (it failed after approval: nothing dropped).
    case refund(requestID: String, by: String)
    /// Pay the credit back as change (the customer's escrow return), under `requestID`.
    case cancel(requestID: String, by: String)

    public var requestID: String {
        switch self {
        case .spend(let id, _, _, _, _), .refund(let id, _), .cancel(let id, _): id
        }
    }
}

/// What the ledger holds for a command, read for the core (`.lookUp`).
public struct CreditLookup: Sendable, Hashable {
    /// The source's accounts, one per currency.
    public var accounts: [CreditAccount]
    /// The moves under the request id (a sale and its refund), and the payout under it.
    public var moves: [CreditMoveRecord]
    public var payout: PayoutRecord?

    public init(accounts: [CreditAccount], moves: [CreditMoveRecord], payout: PayoutRecord?) {
        self.accounts = accounts
        self.moves = moves
        self.payout = payout
    }
}

/// How a credit command ended; the daemon encodes it as the socket's reply.
public enum CreditAnswer: Sendable, Equatable {
    /// A sale approved. `repeated`: approved by an earlier ask under the same id.
    case spent(CreditMoveRecord, repeated: Bool)
    /// A sale asked again after it was put back: approved once, and refunded since (a kiosk
    /// replaying its journal must not vend it again).
    case spentAndRefunded(sale: CreditMoveRecord, refund: CreditMoveRecord)
    /// A sale refused, nothing recorded: the credit is short of it.
    case short(balanceMinor: Int64, currency: String)
    /// A sale put back. `repeated`: by an earlier ask.
    case refunded(CreditMoveRecord, repeated: Bool)
    /// The credit paid back as change: the payout core's answer (settled, open or repeated);
    /// `keptMinor`: what no coins held could make, left as credit.
    case returned(PayoutAnswer, keptMinor: Int64)
    /// Nothing paid back: the credit stays, and why (nothing to return, no payout device).
    case kept(balanceMinor: Int64, currency: String, reason: String)
    /// Nothing done: the daemon or the ledger cannot now; ask again under the same id.
    case unavailable(String)
    /// Nothing done: `field` of the command is wrong, and why.
    case badRequest(field: String, String)
}
