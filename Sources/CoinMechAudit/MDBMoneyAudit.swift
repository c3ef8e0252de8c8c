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
/// Money out: every coin that left a tube (the truth's payouts) against the journal, per coin
/// type (`PayoutVerdict`, read through as this audit's own fields); a tube's level on the
/// ledger is the changer's last counter row.
@dynamicMemberLookup
public struct MDBMoneyAudit: Sendable {
    public var kept = 0
    public var credited = 0
    public var skipped = 0
    public var phantom = false
    public var doubled: [Int64] = []
    public var out: PayoutVerdict
    public var jams = 0
    public var resetsMidPayout = 0
    /// The changer's faults coinsim played: replies the adapter lost (the changer had acted),
    /// and tube counts that disagreed with a DISPENSE just paid.
    public var lostReplies = 0
    public var tubeLags = 0

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

        var truthPaid: [Int: Int] = [:]
        for payout in truth.payouts { truthPaid[payout.type, default: 0] += payout.paid }
        let recorded = tubes.map { $0.map(Int.init) } ?? []
        out = PayoutVerdict(PayoutJournalTally(payouts), devicePaid: truthPaid, dispenses: truth.payouts.filter { $0.alternative == nil }.count,
                            inventoryMismatch: truth.tubesAtEnd.indices.filter { type in (recorded.indices.contains(type) ? recorded[type] : -1) != truth.tubesAtEnd[type] },
                            valuePayouts: truth.valuePayouts.map { payout in
                                var coins: [Int: Int] = [:]
                                for row in truth.payouts where row.alternative == payout.number { coins[row.type, default: 0] += row.paid }
                                return DeviceValuePayout(askedMinor: payout.askedMinor, paidMinor: payout.paidMinor, coins: coins)
                            })
        jams = truth.payouts.filter { $0.ended == "jam" }.count
        resetsMidPayout = truth.payouts.filter { $0.ended == "reset" }.count
        lostReplies = truth.lostReplies
        tubeLags = truth.tubeLags
    }

    public subscript<T>(dynamicMember path: KeyPath<PayoutVerdict, T>) -> T { out[keyPath: path] }

    public var isClean: Bool { !phantom && doubled.isEmpty && out.isClean }

    public var problems: String {
        var lines: [String] = []
        if phantom { lines.append("PHANTOM: the credits are not the kept coins in order") }
        if !doubled.isEmpty { lines.append("DOUBLED coin numbers: \(doubled)") }
        return (lines + out.problems(device: "the changer", units: "tubes")).joined(separator: "\n")
    }
}
