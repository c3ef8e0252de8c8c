import CoinMechModel

/// The ledger's payouts summed for an audit, whatever paid them: the coins the journalled steps
/// asked for and the coins the settlements say were paid, per coin type (a changer's) or unit
/// (a hopper's), and the money settled and owed. Each audit holds it against its device's own
/// account of what left it.
public struct PayoutJournalTally: Sendable {
    public var payouts = 0
    public var open = 0
    public var asked: [Int: Int] = [:]
    /// What each value step asked (a changer that chose the coins: MDB level 3), in minor units,
    /// in the journal's order.
    public var valueSteps: [Int64] = []
    public var recorded: [Int: Int] = [:]
    public var paidMinor: Int64 = 0
    public var debtMinor: Int64 = 0
    public var settlements: [PayoutSettlement] = []

    public init(_ records: [PayoutRecord]) {
        payouts = records.count
        open = records.filter(\.isOpen).count
        for record in records {
            for step in record.steps {
                if step.paysValue { valueSteps.append(step.valueMinor) } else { asked[step.type, default: 0] += step.count }
            }
            guard let settlement = record.settlement else { continue }
            for (type, count) in settlement.paidCoins { recorded[type, default: 0] += count }
            paidMinor += settlement.paidMinor
            debtMinor += settlement.debtMinor
            settlements.append(settlement)
        }
    }

    /// Coins the device paid of a type beyond what the journal asked (a dispense sent again, or
    /// never journalled), and the coins by which its payments and the ledger's differ.
    public func paidTwice(_ type: Int, devicePaid: Int) -> Int { max(0, devicePaid - asked[type, default: 0]) }
    public func unpaidUnrecorded(_ type: Int, devicePaid: Int) -> Int { abs(devicePaid - recorded[type, default: 0]) }
}
