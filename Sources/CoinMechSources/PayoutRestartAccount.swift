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

extension PayoutRestartAccount {
    /// A changer's account: its tubes counted with it held, if it is the changer that paid
    /// (`device` is who it is now, as the journal records it; unknown on either side is not
    /// taken for another one).
    public static func changer(_ record: PayoutRecord, tubes: (counts: [Int], reported: Int)?, device: String?) -> PayoutRestartAccount {
        guard let tubes else { return .wait }
        if let paid = record.device, let now = device, paid != now {
            return .unverifiable("the device at the address is not the one that paid (it was \(paid), it is \(now)): its count cannot say what was paid; check the cash before paying the debt")
        }
        return .counts(tubes.counts, reported: tubes.reported, inventory: [], caveat: nil)
    }
}
