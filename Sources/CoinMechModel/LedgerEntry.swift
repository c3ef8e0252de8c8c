/// Something to record.
public enum LedgerEntry: Sendable, Equatable {
    /// A decided coin; (`source`, `epoch`, `deviceSeq`) identifies it. An accept is recorded
    /// `pending` (`.onConfirmation`) or credited at once (`.atOnce`, which also records its
    /// `coin` event).
    case decision(DecisionRecord, credit: CreditRule)
    /// Settles the pending accept recorded as `decisionSeq`; `message` says why for people.
    /// Nothing is recorded if the coin is no longer pending.
    case resolve(decisionSeq: Int64, Resolution, message: String? = nil)
    /// Late evidence: the mech's journal says an `unconfirmed` coin was stored after all. Credits
    /// it (a `coin` event beside its `coin_unconfirmed`, the totals moved once); nothing is
    /// recorded if the coin is not unconfirmed any more.
    case lateCredit(decisionSeq: Int64, message: String)
    /// Anything else worth a record. A power-up or a session moves the source's epoch and records
    /// its boot number; a startup or reload records the chain generation.
    case note(Occurrence)
    /// Closes the cash-box period: records a `collect` event (`by`) with the period's credited
    /// totals and unconfirmed coins as its rows, and resets the current period. Lifetime totals stay.
    case collect(by: String)
    /// Money out: a payout asked for (its plan, for people), before any coin moves. Refused
    /// (`LedgerError.precondition`) if its request id is on the ledger already.
    /// `device`: the changer that pays it (its serial number and coin table), so that a payout a
    /// crash leaves open is settled only from that changer's tubes.
    case payoutRequested(PayoutOrder, source: String, plan: String, device: String?)
    /// A DISPENSE of an open payout, before it is sent.
    case payoutDispensing(requestID: String, step: Int, PayoutStep)
    /// An open payout's end. Refused if it is not open: a payout is settled once.
    case payoutSettled(requestID: String, PayoutSettlement)
    /// A hopper's level moved: coins a payout step paid, an operator's refill or count.
    case inventory(InventoryChange)
    /// Credit held for `source` from now on: an account named `account` in each currency, at 0
    /// (those open already are left as they are). Coins credited after it raise it.
    case creditOpened(source: String, account: String, currencies: [String], by: String)
    /// A sale, a refund of one, or an expiry (`CreditMove`). Refused (`LedgerError.precondition`)
    /// for a request id on the ledger already, a sale beyond the balance, a refund of no sale
    /// or of one refunded, an expiry of a balance that has moved.
    case credit(CreditMove)
}
