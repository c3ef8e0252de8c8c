/// How a payout ended, as the ledger records it (`payout_done`, `payout_partial`,
/// `payout_failed`): what was paid by the changer's own count, and what is still owed.
public struct PayoutSettlement: Sendable, Hashable {
    public enum Outcome: String, Sendable, Hashable {
        /// The whole amount paid.
        case done
        /// Some paid, `debtMinor` owed to the customer.
        case partial
        /// Nothing paid; the whole amount owed (if any coin was to move) or refused.
        case failed

        public var kind: EventKind {
            switch self {
            case .done: .payoutDone
            case .partial: .payoutPartial
            case .failed: .payoutFailed
            }
        }
    }

    public var outcome: Outcome
    public var paidMinor: Int64
    public var debtMinor: Int64
    /// Coins paid per coin type.
    public var paidCoins: [Int: Int]
    /// Why it is not done, for people ("tube jam", "cannot pay exact: …").
    public var reason: String?
    /// Settled by a daemon that found the payout open at its start (the one that began it
    /// died), from the tubes it counted then.
    public var afterRestart: Bool

    public init(outcome: Outcome, paidMinor: Int64, debtMinor: Int64, paidCoins: [Int: Int], reason: String?, afterRestart: Bool) {
        self.outcome = outcome
        self.paidMinor = paidMinor
        self.debtMinor = debtMinor
        self.paidCoins = paidCoins
        self.reason = reason
        self.afterRestart = afterRestart
    }
}
