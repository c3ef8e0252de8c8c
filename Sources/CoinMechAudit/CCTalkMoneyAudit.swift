import CoinMechLedger
import CoinMechModel
import CoinSimCore

/// A `coinsim --protocol cctalk` session's ground truth joined with the ledger, event by event:
/// what the ccTalk crash run and end-to-end tests judge by. An event is known by the
/// acceptor's session and its unwrapped number; the ledger's (epoch, device_seq) follow them.
///
/// The money is every credit event the acceptor made after the daemon first met it and that a
/// reply carried before it left the buffer:
/// - **lost**: such a credit the ledger did not credit;
/// - **doubled**: a credit the ledger credited (`coin` events) more than once;
/// - **phantom**: a ledger credit that is no such event;
/// - **namedLost**: credits the acceptor dropped before any reply carried them (more than five
///   events between two reads, or a restart): not the daemon's to credit; those of an overrun
///   the ledger names (`cctalk_lost`).
public struct CCTalkMoneyAudit: Sendable {
    public struct Key: Hashable, Sendable, Comparable, CustomStringConvertible {
        public var epoch: Int64
        public var number: Int64
        public init(epoch: Int64, number: Int64) {
            self.epoch = epoch
            self.number = number
        }
        public static func < (a: Key, b: Key) -> Bool { (a.epoch, a.number) < (b.epoch, b.number) }
        public var description: String { "session \(epoch) event \(number)" }
    }

    /// Credits the daemon owed.
    public var credits = 0
    public var lost: [Key] = []
    public var doubled: [Key] = []
    public var phantom: [Key] = []
    public var namedLost = 0
    /// Value credited on the ledger and owed by the truth, per currency.
    public var creditedValue: [String: Int64] = [:]
    public var owedValue: [String: Int64] = [:]

    public init(truth: CCTalkGroundTruth, events: [LedgerEvent], source: String) {
        var owed: Set<Key> = []
        for event in truth.events where (1...16).contains(event.a) && !event.beforeHost {
            if event.lost {
                namedLost += 1
            } else {
                owed.insert(Key(epoch: Int64(event.session), number: Int64(event.event)))
            }
        }
        credits = owed.count
        owedValue = truth.creditedValue
        for (currency, value) in truth.lostValue { owedValue[currency, default: 0] -= value }
        owedValue = owedValue.filter { $0.value != 0 }
        var credited: [Key: Int] = [:]
        for event in events where event.source == source && event.kind == EventKind.coin.rawValue {
            guard let epoch = event.epoch, let number = event.deviceSeq else { continue }
            credited[Key(epoch: epoch, number: number), default: 0] += 1
            if let currency = event.currency, let value = event.valueMinor { creditedValue[currency, default: 0] += value }
        }
        lost = owed.subtracting(credited.keys).sorted()
        doubled = credited.filter { $0.value > 1 }.map(\.key).sorted()
        phantom = Set(credited.keys).subtracting(owed).sorted()
    }

    public var isClean: Bool { lost.isEmpty && doubled.isEmpty && phantom.isEmpty && creditedValue == owedValue }

    public var problems: String {
        var lines: [String] = []
        if !lost.isEmpty { lines.append("LOST (taken and reported, not credited): \(lost)") }
        if !doubled.isEmpty { lines.append("DOUBLED: \(doubled)") }
        if !phantom.isEmpty { lines.append("PHANTOM (credited, not taken): \(phantom)") }
        if creditedValue != owedValue { lines.append("VALUE: credited \(creditedValue), owed \(owedValue)") }
        return lines.joined(separator: "\n")
    }
}
