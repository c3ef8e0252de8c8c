/// Money out judged, whatever paid it: the ledger's payouts (`PayoutJournalTally`) against what
/// the device says left it, per coin type (a changer's) or unit (a hopper's). What
/// `HopperMoneyAudit` and `MDBMoneyAudit` hold alike.
/// - **paidTwice**: coins paid beyond what the journalled steps asked for (a dispense sent
///   again, or never journalled);
/// - **unpaidUnrecorded**: coins where the ledger's settled payouts and the device disagree
///   (paid and not recorded, or recorded and not paid);
/// - **open**: payouts still open on the ledger at the end;
/// - **inventoryMismatch**: units or tubes whose level on the ledger is not what the device holds.
public struct PayoutVerdict: Sendable {
    public var payouts = 0
    public var dispenses = 0
    public var paidTwice = 0
    public var unpaidUnrecorded = 0
    public var open = 0
    public var inventoryMismatch: [Int] = []
    public var paidMinor: Int64 = 0
    public var debtMinor: Int64 = 0

    /// `devicePaid`: coins that left the device, per type or unit; every type either side
    /// names is judged (a unit the ledger paid from and the device never had is a mismatch).
    /// `valuePayouts`: the values the device paid choosing the coins itself (MDB level 3), in
    /// the order it took them, their coins among `devicePaid`. Each is held to a value step of
    /// the journal, in the journal's order (some journalled steps never sent): one that matches
    /// no step, or paid more than its step asked, paid its coins twice. The rest of the coins
    /// are held to what the DISPENSEs asked, type by type.
    public init(_ tally: PayoutJournalTally, devicePaid: [Int: Int], dispenses: Int, inventoryMismatch: [Int], valuePayouts: [DeviceValuePayout] = []) {
        payouts = tally.payouts
        open = tally.open
        paidMinor = tally.paidMinor
        debtMinor = tally.debtMinor
        self.dispenses = dispenses
        self.inventoryMismatch = inventoryMismatch
        var byValue: [Int: Int] = [:]
        // The next journalled step a device payout may match: one that matches none leaves it
        // where it was, so a payout taken twice does not make every later one unmatched.
        var next = tally.valueSteps.startIndex
        for payout in valuePayouts {
            for (type, count) in payout.coins { byValue[type, default: 0] += count }
            let match = tally.valueSteps[next...].firstIndex(of: payout.askedMinor)
            if let match { next = match + 1 }
            if match == nil || payout.paidMinor > payout.askedMinor { paidTwice += payout.coins.values.reduce(0, +) }
        }
        for type in Set(devicePaid.keys).union(tally.recorded.keys).union(tally.asked.keys) {
            paidTwice += tally.paidTwice(type, devicePaid: devicePaid[type, default: 0] - byValue[type, default: 0])
            unpaidUnrecorded += tally.unpaidUnrecorded(type, devicePaid: devicePaid[type, default: 0])
        }
    }

    public var isClean: Bool { paidTwice == 0 && unpaidUnrecorded == 0 && open == 0 && inventoryMismatch.isEmpty }

    /// One line a problem; `device` names what paid (`hoppers`, `the changer`), `units` what
    /// holds the coins (`units`, `tubes`).
    public func problems(device: String, units: String) -> [String] {
        var lines: [String] = []
        if paidTwice > 0 { lines.append("PAID TWICE: \(paidTwice) coin(s) paid by \(device) beyond what the journal asked") }
        if unpaidUnrecorded > 0 { lines.append("UNPAID OR UNRECORDED: the ledger's paid coins differ by \(unpaidUnrecorded) from what \(device) paid") }
        if open > 0 { lines.append("OPEN: \(open) payout(s) never settled") }
        if !inventoryMismatch.isEmpty { lines.append("INVENTORY: \(units) \(inventoryMismatch) on the ledger differ from what \(device) hold(s)") }
        return lines
    }
}
