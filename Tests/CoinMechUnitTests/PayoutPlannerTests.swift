import CoinMechCore
import CoinSimCore
@testable import CoinMechTestSupport
import Testing

/// Paying an amount from the tubes: exact or nothing, the fewest coins, the nearest payable
/// amounts when it cannot be done.
@Suite("Payout plans: exact from the tubes, fewest coins, or the nearest amounts that can be paid")
struct PayoutPlannerTests {
    private static func tubes(_ counts: [Int64: Int]) -> [PayoutPlanner.Coins] {
        counts.sorted { $0.key < $1.key }.enumerated().map { PayoutPlanner.Coins(type: $0.offset, valueMinor: $0.element.key, count: $0.element.value) }
    }

    private static func paid(_ plan: PayoutPlanner.Plan) -> [Int64: Int]? {
        guard case .exact(let steps) = plan else { return nil }
        return Dictionary(steps.map { ($0.valueMinor, $0.count) }, uniquingKeysWith: +)
    }

    @Test("largest coin first where that reaches the amount", arguments: [
        (Int64(40), [Int64(25): 5, 10: 5, 5: 5], [Int64(25): 1, 10: 1, 5: 1]),
        (75, [25: 2, 10: 0, 5: 10], [25: 2, 5: 5]),
        (100, [25: 8, 10: 8, 5: 8], [25: 4]),
    ] as [(Int64, [Int64: Int], [Int64: Int])])
    func largestFirst(amount: Int64, held: [Int64: Int], expected: [Int64: Int]) {
        #expect(Self.paid(PayoutPlanner.plan(amount, from: Self.tubes(held))) == expected)
    }

    @Test("a plan where largest first finds none: 30 from quarters and dimes is three dimes")
    func notGreedy() {
        #expect(Self.paid(PayoutPlanner.plan(30, from: Self.tubes([25: 5, 10: 5]))) == [10: 3])
        #expect(Self.paid(PayoutPlanner.plan(60, from: Self.tubes([50: 1, 20: 3]))) == [20: 3])
    }

    @Test("when the exact amount cannot be paid, the nearest amounts that can")
    func cannotPayExact() {
        #expect(PayoutPlanner.plan(35, from: Self.tubes([25: 1, 5: 1])) == .cannotPayExact(below: 30, above: nil))
        #expect(PayoutPlanner.plan(15, from: Self.tubes([25: 4, 10: 1])) == .cannotPayExact(below: 10, above: 25))
        #expect(PayoutPlanner.plan(5, from: []) == .cannotPayExact(below: 0, above: nil))
        #expect(PayoutPlanner.plan(5, from: Self.tubes([10: 3])) == .cannotPayExact(below: 0, above: 10))
    }

    @Test("a plan never pays a bundle of a tube twice: 25 from 17, three 7s and one 4 is three 7s and the 4")
    func bundleOnce() {
        #expect(Self.paid(PayoutPlanner.plan(25, from: Self.tubes([17: 1, 7: 3, 4: 1]))) == [7: 3, 4: 1])
    }

    @Test("against every way the coins held can be paid, on 2000 random changers (coin sets and odd values, tokens): the same answer, never more coins")
    func againstBruteForce() {
        var random = SplitMix64(seed: 26)
        for trial in 0..<2000 {
            // Half of them real coin sets, half odd values from 1 to 30, as tokens can be.
            let values: [Int64] = trial % 2 == 0
                ? [5, 10, 20, 25, 50, 100].filter { _ in random.next() % 2 == 0 }
                : (0..<(1 + Int(random.next() % 5))).map { _ in Int64(1 + random.next() % 30) }
            let held = Dictionary(values.map { ($0, Int(random.next() % 9)) }, uniquingKeysWith: +)
            let amount = Int64(1 + random.next() % 300)
            // Every combination of counts the tubes allow: the amounts, with the fewest coins for each.
            var fewest: [Int64: Int] = [0: 0]
            for (value, count) in held {
                var next = fewest
                for (reached, coins) in fewest {
                    for n in 0...count where n > 0 {
                        let total = reached + value * Int64(n)
                        next[total] = min(next[total] ?? .max, coins + n)
                    }
                }
                fewest = next
            }
            let plan = PayoutPlanner.plan(amount, from: Self.tubes(held))
            if let best = fewest[amount] {
                let paid = Self.paid(plan)
                #expect(paid.map { $0.reduce(0) { $0 + $1.key * Int64($1.value) } } == amount, "\(amount) from \(held)")
                #expect(paid.map { $0.values.reduce(0, +) } == best, "\(amount) from \(held): not the fewest coins")
                #expect(paid?.allSatisfy { held[$0.key, default: 0] >= $0.value } == true, "more coins than held")
            } else {
                let below = fewest.keys.filter { $0 < amount }.max() ?? 0
                let above = fewest.keys.filter { $0 > amount }.min()
                #expect(plan == .cannotPayExact(below: below, above: above), "\(amount) from \(held)")
            }
        }
    }
}
