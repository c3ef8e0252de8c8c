import CoinMechLedger
import CoinMechModel
import CoinSimCore

/// Money out of ccTalk hoppers: a `coinsim --protocol cctalk` session's hoppers (every coin
/// that left one, per dispense) joined with the ledger's payouts and inventory. What the ccTalk
/// crash run and the hopper end-to-end tests judge by. Units are the hoppers in configuration
/// order, as the daemon numbers them.
/// - **paidTwice**: coins a hopper paid beyond what the journalled steps of its unit asked for
///   (a dispense sent again, or never journalled);
/// - **unpaidUnrecorded**: per unit, the difference between what the hopper paid and what the
///   ledger's settled payouts say it paid (paid and not recorded, or recorded and not paid);
/// - **open**: payouts still open on the ledger at the end;
/// - **inventoryMismatch**: units whose level on the ledger is not what the hopper holds at the
///   end (the ledger's levels start from the operator's count of the hoppers' real contents).
public struct HopperMoneyAudit: Sendable {
    public var payouts = 0
    public var dispenses = 0
    public var paidTwice = 0
    public var unpaidUnrecorded = 0
    public var open = 0
    public var inventoryMismatch: [Int] = []
    public var paidMinor: Int64 = 0
    public var debtMinor: Int64 = 0
    public var jams = 0
    public var powerDowns = 0
    public var empties = 0
    /// Settlements that could not tell what a hopper paid (it restarted without its flag).
    public var unverifiable = 0

    public init(hoppers: [CCTalkGroundTruth.Hopper], payouts: [PayoutRecord], levels: [Int: InventoryLevel]) {
        let tally = PayoutJournalTally(payouts)
        self.payouts = tally.payouts
        open = tally.open
        paidMinor = tally.paidMinor
        debtMinor = tally.debtMinor
        unverifiable = tally.settlements.filter { $0.reason?.contains("cannot be told") == true }.count
        dispenses = hoppers.reduce(0) { $0 + $1.dispenses.count }
        for (unit, hopper) in hoppers.enumerated() {
            paidTwice += tally.paidTwice(unit, devicePaid: hopper.paidCoins)
            unpaidUnrecorded += tally.unpaidUnrecorded(unit, devicePaid: hopper.paidCoins)
            if levels[unit]?.level != hopper.coinsEnd { inventoryMismatch.append(unit) }
            jams += hopper.jams
            powerDowns += hopper.powerDowns
            empties += hopper.empties
        }
    }

    public var isClean: Bool { paidTwice == 0 && unpaidUnrecorded == 0 && open == 0 && inventoryMismatch.isEmpty }

    public var problems: String {
        var lines: [String] = []
        if paidTwice > 0 { lines.append("PAID TWICE: \(paidTwice) coin(s) paid by hoppers beyond what the journal asked") }
        if unpaidUnrecorded > 0 { lines.append("UNPAID OR UNRECORDED: the ledger's paid coins differ from the hoppers' by \(unpaidUnrecorded)") }
        if open > 0 { lines.append("OPEN: \(open) payout(s) never settled") }
        if !inventoryMismatch.isEmpty { lines.append("INVENTORY: units \(inventoryMismatch) on the ledger differ from what the hoppers hold") }
        return lines.joined(separator: "\n")
    }
}
