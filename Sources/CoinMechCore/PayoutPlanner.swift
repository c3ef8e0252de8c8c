import CoinMechModel

/// The payout core's policy for paying an amount from what the device holds, with no I/O: the
/// plan a payout journals before any coin moves, and the answer of a dry run.
///
/// The plan is exact or it is nothing: a changer pays whole coins, and paying less than asked
/// without saying so is owing the customer. It takes the fewest coins that make the amount, so
/// it pays largest coin first wherever that is fewest, and finds a plan where largest first
/// finds none (30 from quarters and dimes is three dimes). Among plans of as many coins it
/// keeps the first found taking the tubes largest value first, which is not always the one
/// with the larger coins. When no plan exists, it names the nearest amounts that can be paid.
public enum PayoutPlanner {
    /// Coins of one type: those a tube holds, or those a plan pays.
    public struct Coins: Sendable, Hashable, CustomStringConvertible {
        /// The changer's coin type.
        public var type: Int
        public var valueMinor: Int64
        public var count: Int

        public init(type: Int, valueMinor: Int64, count: Int) {
            self.type = type
            self.valueMinor = valueMinor
            self.count = count
        }

        public var description: String { "\(count) × \(valueMinor) (type \(type))" }
    }

    public enum Plan: Sendable, Hashable {
        /// These coins, largest first, make the amount exactly.
        case exact([Coins])
        /// No set of the coins held makes the amount: the nearest amounts that can be paid
        /// below it (0 at least) and above it (nil if none).
        case cannotPayExact(below: Int64, above: Int64?)
    }

    /// The largest amount a plan is made for, in minor units: payouts are change, not cash
    /// withdrawals, and the search's memory grows with the amount.
    public static let maximumAmount: Int64 = 100_000

    /// The plan for `amount` (minor units, above 0, at most `maximumAmount`) from `tubes`.
    public static func plan(_ amount: Int64, from tubes: [Coins]) -> Plan {
        precondition(amount > 0 && amount <= maximumAmount, "a payout amount is checked before it is planned")
        let usable = tubes.filter { $0.valueMinor > 0 && $0.count > 0 }.sorted { $0.valueMinor > $1.valueMinor }
        let total = usable.reduce(Int64(0)) { $0 + $1.valueMinor * Int64($1.count) }
        // The amounts reachable up to the larger of the amount and the nearest one above it.
        let limit = Int(min(total, amount + (usable.map(\.valueMinor).max() ?? 0)))
        // fewest[a]: the fewest coins that make a. Bounded coin change over each tube's coins
        // split in powers of two (1, 2, 4, … the rest), each bundle used at most once, tubes
        // taken largest value first: a later bundle replaces a plan only with fewer coins.
        // chosen[b] marks the amounts bundle b improved when it was added: walked back from the
        // last bundle, they give the plan (a plan read from one array of last choices can use a
        // bundle twice).
        let none = Int.max
        var fewest = [Int](repeating: none, count: limit + 1)
        fewest[0] = 0
        var bundles: [(tube: Int, count: Int, value: Int)] = []
        var chosen: [[UInt64]] = []
        for (index, tube) in usable.enumerated() {
            var left = tube.count
            var size = 1
            while left > 0 {
                let count = min(size, left)
                left -= count
                size *= 2
                let value = Int(tube.valueMinor) * count
                guard value <= limit else { continue }
                var marks = [UInt64](repeating: 0, count: limit / 64 + 1)
                for reached in stride(from: limit, through: value, by: -1) where fewest[reached - value] != none {
                    let coins = fewest[reached - value] + count
                    if coins < fewest[reached] {
                        fewest[reached] = coins
                        marks[reached / 64] |= 1 << UInt64(reached % 64)
                    }
                }
                bundles.append((index, count, value))
                chosen.append(marks)
            }
        }
        let target = Int(amount)
        guard target <= limit, fewest[target] != none else {
            let below = (0..<min(target, limit + 1)).last { fewest[$0] != none } ?? 0
            let above = target < limit ? ((target + 1)...limit).first { fewest[$0] != none } : nil
            return .cannotPayExact(below: Int64(below), above: above.map(Int64.init))
        }
        var counts = [Int](repeating: 0, count: usable.count)
        var at = target
        for (bundle, marks) in zip(bundles, chosen).reversed() where at > 0 && marks[at / 64] & (1 << UInt64(at % 64)) != 0 {
            counts[bundle.tube] += bundle.count
            at -= bundle.value
        }
        return .exact(usable.indices.filter { counts[$0] > 0 }.map { Coins(type: usable[$0].type, valueMinor: usable[$0].valueMinor, count: counts[$0]) })
    }
}
