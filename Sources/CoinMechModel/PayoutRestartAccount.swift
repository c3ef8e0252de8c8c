/// What a held paying device says of a payout found open at a start, in its own words; the
/// payout core settles from it (`PayoutRun.settle`).
public enum PayoutRestartAccount: Sendable, Hashable {
    /// Not known yet (still paying, not read yet, its serial number not read).
    case wait
    /// A changer's tubes, counted with it held, and how many tubes the count covers: each
    /// tube's fall from its first step's count is what was paid.
    case tubes([Int], reported: Int)
    /// The hopper of the last step says, by its own counter, that the step paid `paid` coins
    /// (0: it was never taken). The earlier steps are on the ledger's levels already.
    case lastStep(paid: Int)
    /// The hopper of the last step cannot say what that step paid (`why`): it counts as
    /// nothing paid, and the settlement says to check the cash.
    case lastStepUnknown(String)
    /// Nothing the device says can settle it (it is not the device that paid, or is not
    /// configured any more): nothing is settled as paid, and the reason says to check the cash.
    case unverifiable(String)
}
