import CoinMechLedger
import CoinMechModel
import CoinSimCore

/// Money out of ccTalk hoppers: a `coinsim --protocol cctalk` session's hoppers (every coin
/// that left one, per dispense) joined with the ledger's payouts and inventory (`PayoutVerdict`,
/// read through as this audit's own fields). What the ccTalk crash run and the hopper
/// end-to-end tests judge by. Units are the hoppers in configuration order, as the daemon
/// numbers them; the ledger's levels start from the operator's count of the hoppers' contents.
@dynamicMemberLookup
public struct HopperMoneyAudit: Sendable {
    public var out: PayoutVerdict
    public var jams = 0
    public var powerDowns = 0
    public var empties = 0
    /// The hoppers' faults coinsim played: replies lost after the hopper acted, requests
    /// refused with NAK or BUSY, serial number requests refused, hoppers exchanged mid-payout.
    public var lostReplies = 0
    public var naks = 0
    public var busies = 0
    public var hiddenSerials = 0
    public var exchanges = 0
    /// Settlements that could not tell what a hopper paid (it restarted without its flag).
    public var unverifiable = 0

    public init(hoppers: [CCTalkGroundTruth.Hopper], payouts: [PayoutRecord], levels: [Int: InventoryLevel]) {
        let tally = PayoutJournalTally(payouts)
        out = PayoutVerdict(tally, devicePaid: Dictionary(uniqueKeysWithValues: hoppers.enumerated().map { ($0.offset, $0.element.paidCoins) }),
                            dispenses: hoppers.reduce(0) { $0 + $1.dispenses.count },
                            inventoryMismatch: hoppers.indices.filter { levels[$0]?.level != hoppers[$0].coinsEnd })
        unverifiable = tally.settlements.filter { $0.reason?.contains("cannot be told") == true }.count
        for hopper in hoppers {
            jams += hopper.jams
            powerDowns += hopper.powerDowns
            empties += hopper.empties
            lostReplies += hopper.lostReplies
            naks += hopper.naks
            busies += hopper.busies
            hiddenSerials += hopper.hiddenSerials
            exchanges += hopper.exchanges
        }
    }

    public subscript<T>(dynamicMember path: KeyPath<PayoutVerdict, T>) -> T { out[keyPath: path] }

    public var isClean: Bool { out.isClean }

    public var problems: String { out.problems(device: "the hoppers", units: "units").joined(separator: "\n") }
}
