import CoinMechLedger
import CoinMechModel
import CoinSimCore

/// The simulator's ground truth joined with the ledger, coin by coin: what the money suite
/// and `make test-crash` judge a run by.
///
/// A coin is known by the mech's boot number and its device seq: both sides record them (the
/// ledger keeps each epoch's boot). Against where each coin really ended:
/// - **lost**: it reached the cash box, and the ledger neither credited it nor holds it as
///   unconfirmed or pending;
/// - **doubled**: the ledger credited it more than once;
/// - **phantom**: the ledger credited it, but it did not reach the cash box;
/// - **unconfirmed**: the ledger holds it as unconfirmed (audit, not credit); each is
///   explained by the truth (power lost while it fell) or listed as unexplained;
/// - **pending**: still waiting for the mech's word when the run ended;
/// - **wrong value**: credited at another value or currency than the coin's face value, as the
///   simulator states it (`FaceValues`, apart from the tables plugins credit from).
public struct MoneyAudit: Sendable {
    public struct Key: Hashable, Sendable, Comparable, CustomStringConvertible {
        public var boot: UInt64
        public var devseq: UInt64
        public init(boot: UInt64, devseq: UInt64) {
            self.boot = boot
            self.devseq = devseq
        }
        public static func < (a: Key, b: Key) -> Bool { (a.boot, a.devseq) < (b.boot, b.devseq) }
        public var description: String { "boot \(boot) devseq \(devseq)" }
    }

    public var coins = 0
    public var stored: Set<Key> = []
    public var credited: [Key: Int] = [:]
    public var lost: [Key] = []
    public var doubled: [Key] = []
    public var phantom: [Key] = []
    public var pending: [Key] = []
    public var wrongValue: [Key] = []
    /// Each unconfirmed coin with the truth's explanation (nil: unexplained).
    public var unconfirmed: [(key: Key, explanation: String?)] = []
    /// Ledger coins whose epoch has no boot number: they cannot be joined.
    public var unjoinable = 0

    /// Joins `truths` (every simulator session of the run, in order) with the ledger's events
    /// of `source`, given each epoch's boot number.
    public init(truths: [GroundTruth], events: [LedgerEvent], boots: [Int64: UInt64]) {
        var fates: [Key: GroundTruth.Coin] = [:]
        for truth in truths {
            for coin in truth.coins where coin.devseq > 0 {
                guard let boot = coin.boot else { continue }
                fates[Key(boot: boot, devseq: coin.devseq)] = coin
                coins += 1
                if coin.fate == "stored", coin.confirmation != "power_lost" { stored.insert(Key(boot: boot, devseq: coin.devseq)) }
            }
        }
        var held: Set<Key> = []
        for event in events {
            guard let epoch = event.epoch, let devseq = event.deviceSeq else { continue }
            guard let boot = boots[epoch] else {
                if event.kind == EventKind.coin.rawValue { unjoinable += 1 }
                continue
            }
            let key = Key(boot: boot, devseq: UInt64(devseq))
            switch event.kind {
            case EventKind.coin.rawValue:
                credited[key, default: 0] += 1
                held.insert(key)
                if let coin = fates[key], coin.fate == "stored", coin.currency != event.currency || coin.valueMinor != event.valueMinor {
                    wrongValue.append(key)
                }
            case EventKind.coinUnconfirmed.rawValue:
                held.insert(key)
                let coin = fates[key]
                let explanation = coin?.confirmation == "power_lost"
                    ? "the mech lost power while the coin fell (it ended \(coin?.fate == "stored" ? "in the cash box" : "in the return cup"))"
                    : nil
                unconfirmed.append((key, explanation))
            case EventKind.decision.rawValue where event.state == "pending":
                held.insert(key)
                pending.append(key)
            default:
                break
            }
        }
        lost = stored.subtracting(held).sorted()
        doubled = credited.filter { $0.value > 1 }.map(\.key).sorted()
        phantom = credited.keys.filter { fates[$0]?.fate != "stored" }.sorted()
        // An unconfirmed coin credited later (the mech's journal said stored) is credit, not audit.
        unconfirmed.removeAll { credited[$0.key] != nil }
        unconfirmed.sort { $0.key < $1.key }
        pending.sort()
        wrongValue.sort()
    }

    /// Nothing lost, doubled, phantom or at a wrong value, no unconfirmed coin unexplained,
    /// nothing pending.
    public var isClean: Bool {
        lost.isEmpty && doubled.isEmpty && phantom.isEmpty && pending.isEmpty && wrongValue.isEmpty && unjoinable == 0
            && unconfirmed.allSatisfy { $0.explanation != nil }
    }

    /// One line per problem, for a failing test's message.
    public var problems: String {
        var lines: [String] = []
        for key in lost { lines.append("lost: \(key) reached the cash box and was not credited") }
        for key in doubled { lines.append("doubled: \(key) credited \(credited[key] ?? 0) times") }
        for key in phantom { lines.append("phantom: \(key) credited but not in the cash box") }
        for key in pending { lines.append("pending: \(key) still waits for the mech's word") }
        for key in wrongValue { lines.append("wrong value: \(key) credited at another value or currency than its face value") }
        for (key, explanation) in unconfirmed where explanation == nil { lines.append("unconfirmed without a cause in the truth: \(key)") }
        if unjoinable > 0 { lines.append("\(unjoinable) credited coins in epochs without a boot number") }
        return lines.joined(separator: "\n")
    }
}
