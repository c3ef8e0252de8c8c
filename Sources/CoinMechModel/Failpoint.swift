/// The named places on the money path where a test can make the daemon die, stall or fail
/// (`Failpoints` arms them), in the order a coin passes them. In the vocabulary: the deciding
/// core names them in its outputs without depending on how they are armed.
public enum Failpoint: String, Sendable, CaseIterable {
    /// The socket is bound and named, before the services start (hit once per start).
    case listening
    /// A reading was parsed off the line, before it is decided.
    case readingParsed = "reading-parsed"
    /// The batch is decided, before its transaction.
    case beforeCommit = "before-commit"
    /// The batch's transaction committed, before any answer is written (a batch answered from
    /// the decision journal passes it after its answers).
    case afterCommit = "after-commit"
    /// A batch of fresh decisions is synced in the decision journal, before any answer and
    /// before its ledger commit.
    case journalled
    /// Every answer of the batch is written, before the batch is published (and, on the
    /// decision journal's path, before its ledger commit).
    case answerWritten = "answer-written"
    /// The batch is published to clients.
    case published
    /// A confirmation (or journal answer) from the mech was parsed, before its commit.
    case confirmationReceived = "confirmation-received"
    /// A confirmation's settlement (credit, return) committed, before the batch's answers
    /// and before it is published.
    case confirmationCommitted = "confirmation-committed"
    /// The reload's event committed, before the new chain is swapped in.
    case reloadSwap = "reload-swap"
    /// The cash-box collection committed, before the operator hears of it.
    case collect
    /// A payout step (`payout_dispensing`) committed, before its DISPENSE is sent.
    case payoutJournalled = "payout-journalled"
    /// A DISPENSE written to the changer's (or a hopper's) line, before it is done paying it.
    case payoutDispensing = "payout-dispensing"
    /// A DISPENSE counted (the changer stopped paying), before the next step or the
    /// settlement is journalled.
    case payoutCounted = "payout-counted"
    /// A hopper payout's counted inventory moves committed with what followed them, before the
    /// loop hears of it. `fail` makes that commit report a failure though it landed.
    case payoutMovesCommitted = "payout-moves-committed"
    /// An operator's refill or float committed, before the loop hears of it. `fail` makes that
    /// commit report a failure though it landed.
    case inventoryCommitted = "inventory-committed"
    /// A sale or a refund of the customer's credit committed, before the loop hears of it.
    /// `fail` makes that commit report a failure though it landed.
    case creditCommitted = "credit-committed"

    /// Whether the place asks `Failpoints.fails`, so that `fail` can be armed there.
    public var canFail: Bool { self == .payoutMovesCommitted || self == .inventoryCommitted || self == .creditCommitted }
}
