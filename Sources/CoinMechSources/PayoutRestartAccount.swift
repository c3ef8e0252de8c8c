import CoinMechModel

/// What a held paying mech says of a payout found open at a start.
public enum PayoutRestartAccount: Sendable, Hashable {
    /// Not yet known (still paying, not yet read).
    case wait
    /// Its units' counts now, the steps' falls from the journal's counts being what was paid;
    /// `inventory`: the moves the settlement records with it (a hopper's last step);
    /// `caveat`: a step whose payment the device cannot tell, counted as nothing paid (the
    /// settlement's reason says so, and to check the cash).
    case counts([Int], reported: Int, inventory: [InventoryChange], caveat: String? = nil)
    /// What was paid cannot be told from the device (it restarted, or is another one): nothing
    /// is settled as paid, and the reason says to check the cash.
    case unverifiable(String)
}
