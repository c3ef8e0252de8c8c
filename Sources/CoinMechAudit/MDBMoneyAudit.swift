import CoinMechLedger
import CoinMechModel
import CoinSimCore

/// A `coinsim --protocol mdb` session's ground truth joined with the ledger: the money in, coin
/// by coin in order, and the money out, coin by coin per type. What the MDB crash run and the
/// payout end-to-end tests judge by.
///
/// Money in. MDB numbers nothing and its POLL is destructive, so the ledger's credits must be
/// the kept coins in order with some left out, never one added or out of order:
/// - **phantom**: the credits are not an in-order selection of the kept coins;
/// - **doubled**: a coin number credited twice;
/// - **skipped**: kept coins not credited: each one a POLL reply the changer forgot, lost on the
///   line (`acceptor_reply_lost`) or read by a daemon killed before it recorded it. The caller
///   bounds them by the deaths and lost replies of the run.
///
/// Money out. Every coin that left a tube (the truth's payouts) against the journal:
/// - **paidTwice**: coins of a type the changer paid beyond what the journalled steps of that
///   type asked for: a DISPENSE sent again, or never journalled;
/// - **unpaidUnrecorded**: coins where the ledger's settled payouts and the changer disagree, per
///   type (paid and not recorded as paid, or recorded as paid and not paid);
/// - **open**: payouts still open on the ledger at the end;
/// - **inventoryMismatch**: tubes whose last count on the ledger (the changer's counter row) is
///   not what the changer holds at the end.
public struct MDBMoneyAudit: Sendable {
    public var kept = 0
    public var credited = 0
    public var skipped = 0
    public var phantom = false
    public var doubled: [Int64] = []
    public var payouts = 0
    public var dispenses = 0
    public var paidTwice = 0
    public var unpaidUnrecorded = 0
    public var open = 0
    public var inventoryMismatch: [Int] = []
    public var debtMinor: Int64 = 0
    public var paidMinor: Int64 = 0
    public var jams = 0
    public var resetsMidPayout = 0

    public init(truth: MDBGroundTruth, events: [LedgerEvent], payouts: [PayoutRecord], tubes: [UInt8]?, source: String) {
        let keptValues = truth.coins.filter { $0.fate != "rejected" }.map { $0.valueMinor ?? -1 }
        kept = keptValues.count
        let credits = events.filter { $0.source == source && $0.kind == EventKind.decision.rawValue && $0.verdict == "accept" }
        credited = credits.count
        var numbers: [Int64: Int] = [:]
        for credit in credits { numbers[credit.deviceSeq ?? -1, default: 0] += 1 }
        doubled = numbers.filter { $0.value > 1 }.map(\.key).sorted()
        // In order within the kept coins, each credited one matched to the next kept of its value.
        var index = 0
        for credit in credits {
            while index < keptValues.count && keptValues[index] != credit.valueMinor { index += 1 }
            guard index < keptValues.count else {
                phantom = true
                break
            }
            index += 1
        }
        skipped = kept - credited

        let tally = PayoutJournalTally(payouts)
        self.payouts = tally.payouts
        open = tally.open
        paidMinor = tally.paidMinor
        debtMinor = tally.debtMinor
        dispenses = truth.payouts.count
        var truthPaid: [Int: Int] = [:]
        for payout in truth.payouts { truthPaid[payout.type, default: 0] += payout.paid }
        for type in Set(truthPaid.keys).union(tally.recorded.keys).union(tally.asked.keys) {
            paidTwice += tally.paidTwice(type, devicePaid: truthPaid[type, default: 0])
            unpaidUnrecorded += tally.unpaidUnrecorded(type, devicePaid: truthPaid[type, default: 0])
        }
        jams = truth.payouts.filter { $0.ended == "jam" }.count
        resetsMidPayout = truth.payouts.filter { $0.ended == "reset" }.count
        let recorded = tubes.map { $0.map(Int.init) } ?? []
        inventoryMismatch = truth.tubesAtEnd.indices.filter { type in (recorded.indices.contains(type) ? recorded[type] : -1) != truth.tubesAtEnd[type] }
    }

    public var isClean: Bool {
        !phantom && doubled.isEmpty && paidTwice == 0 && unpaidUnrecorded == 0 && open == 0 && inventoryMismatch.isEmpty
    }

    public var problems: String {
        var lines: [String] = []
        if phantom { lines.append("PHANTOM: the credits are not the kept coins in order") }
        if !doubled.isEmpty { lines.append("DOUBLED coin numbers: \(doubled)") }
        if paidTwice > 0 { lines.append("PAID TWICE: \(paidTwice) coin(s) paid beyond what the journal asked") }
        if unpaidUnrecorded > 0 { lines.append("UNPAID OR UNRECORDED: the ledger's paid coins differ from the changer's by \(unpaidUnrecorded)") }
        if open > 0 { lines.append("OPEN: \(open) payout(s) never settled") }
        if !inventoryMismatch.isEmpty { lines.append("INVENTORY: tubes \(inventoryMismatch) on the ledger differ from the changer's") }
        return lines.joined(separator: "\n")
    }
}
