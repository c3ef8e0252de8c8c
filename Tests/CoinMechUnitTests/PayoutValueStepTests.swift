@testable import CoinMechCore
import CoinMechLedger
import CoinMechModel
import CoinSimCore
@testable import CoinMechTestSupport
import Foundation
import GRDB
import Testing

/// Value steps (MDB level 3: the changer chooses the coins): cut from the plan's coins, a fall
/// worth more than the step never recorded beyond it, the changer's own account held against
/// the fall, and a journal that does not read back settled as unverified. Each figure is worked
/// out by hand from the tubes given.
@Suite("Payouts: value steps cut from the plan, capped at what they asked, checked against PAYOUT STATUS")
struct PayoutValueStepTests {
    /// USD: type 0 nickel, 1 dime, 2 quarter; a changer scaled by 5 asks at most 255 × 5.
    static let coins = PayoutRunTests.coins
    static let maximum: Int64 = 1_275

    static func counted(_ tubes: [Int], reported: [Int]? = nil, jammed: Bool = false) -> DispenseCount {
        DispenseCount(type: PayoutStep.anyType, count: 1, tubes: tubes, jammed: jammed, uncertain: false, deviceCounts: reported)
    }

    @Test("1,290 from 38 quarters and 34 dimes: steps of 1,270 and 20, each a whole set of the plan's coins (not 1,275, which no coins held make)")
    func stepsFromThePlan() {
        var run = PayoutRun(order: PayoutRunTests.order(1_290), coins: Self.coins, valueStepMaximum: Self.maximum)
        var tubes = [0, 34, 38]
        #expect(run.plan(tubes: tubes) == .exact("38×USD25 34×USD10"))
        let first = run.nextStep(tubes: tubes)
        #expect(first?.valueMinor == 1_270 && first?.tubesBefore == [0, 34, 38])
        // 38 quarters and 32 dimes.
        tubes = [0, 2, 0]
        run.dispensed(Self.counted(tubes))
        #expect(run.nextStep(tubes: tubes)?.valueMinor == 20)
        run.dispensed(Self.counted([0, 0, 0]))
        #expect(run.nextStep(tubes: [0, 0, 0]) == nil)
        #expect(run.settlement() == PayoutSettlement(outcome: .done, paidMinor: 1_290, debtMinor: 0, paidCoins: [2: 38, 1: 34], reason: nil, afterRestart: false))
    }

    @Test("the steps of any plan: each at most the maximum, each a sum of its coins, together the amount", arguments: [Int64(25), 30, 50, 1_275])
    func stepsOfAnyPlan(maximum: Int64) {
        var random = SplitMix64(seed: UInt64(maximum))
        for _ in 0..<200 {
            let plan = [PayoutPlanner.Coins(type: 2, valueMinor: 25, count: Int.random(in: 0...90, using: &random)),
                        PayoutPlanner.Coins(type: 1, valueMinor: 10, count: Int.random(in: 0...90, using: &random)),
                        PayoutPlanner.Coins(type: 0, valueMinor: 5, count: Int.random(in: 0...90, using: &random))]
            let steps = PayoutRun.valueSteps(plan, maximum: maximum)
            let amount = plan.reduce(Int64(0)) { $0 + $1.valueMinor * Int64($1.count) }
            #expect(steps.reduce(0, +) == amount && steps.allSatisfy { $0 > 0 && $0 <= maximum })
            // Largest first: each step takes the quarters, then dimes, then nickels still left.
            var left = plan.map(\.count)
            for step in steps {
                var rest = step
                for (index, coins) in plan.enumerated() {
                    let take = min(Int64(left[index]), rest / coins.valueMinor)
                    left[index] -= Int(take)
                    rest -= take * coins.valueMinor
                }
                #expect(rest == 0, "a step of \(step) is not made of the plan's coins")
            }
        }
    }

    @Test("tubes that fell by more than the step asked: recorded up to the step's value, by PAYOUT STATUS where it fits, and nothing more is paid")
    func fallCapped() {
        // 60 quarters in two steps: 51 (1,275) then 9.
        var run = PayoutRun(order: PayoutRunTests.order(1_500), coins: Self.coins, valueStepMaximum: Self.maximum)
        #expect(run.plan(tubes: [0, 0, 60]) == .exact("60×USD25"))
        #expect(run.nextStep(tubes: [0, 0, 60])?.valueMinor == 1_275)
        // 52 fell (1,300); the changer says it paid 51.
        run.dispensed(Self.counted([0, 0, 8], reported: [0, 0, 51]))
        #expect(run.nextStep(tubes: [0, 0, 8]) == nil, "nothing more is paid on a fall the step does not explain")
        let settlement = run.settlement()
        #expect(settlement.paidMinor == 1_275 && settlement.debtMinor == 225 && settlement.paidCoins == [2: 51])
        #expect(settlement.reason?.contains("fell by 1300 for a value step of 1275") == true)

        // No account, or one beyond the fall: the fall's largest coins up to the step's value.
        for reported in [nil, [0, 9, 0]] as [[Int]?] {
            var other = PayoutRun(order: PayoutRunTests.order(50), coins: Self.coins, valueStepMaximum: Self.maximum)
            _ = other.plan(tubes: [0, 10, 10])
            _ = other.nextStep(tubes: [0, 10, 10])
            other.dispensed(Self.counted([0, 7, 7], reported: reported))
            #expect(other.paid == [2: 2], "105 fell for a step of 50: two quarters recorded")
            #expect(other.settlement().outcome == .done)
        }
    }

    @Test("PAYOUT STATUS that differs from the tubes' fall: the fall is recorded and nothing more is paid; one that agrees goes on")
    func statusAgainstFall() {
        var agreeing = PayoutRun(order: PayoutRunTests.order(1_500), coins: Self.coins, valueStepMaximum: Self.maximum)
        _ = agreeing.plan(tubes: [0, 0, 60])
        _ = agreeing.nextStep(tubes: [0, 0, 60])
        agreeing.dispensed(Self.counted([0, 0, 9], reported: [0, 0, 51]))
        #expect(agreeing.nextStep(tubes: [0, 0, 9])?.valueMinor == 225)

        var differing = PayoutRun(order: PayoutRunTests.order(1_500), coins: Self.coins, valueStepMaximum: Self.maximum)
        _ = differing.plan(tubes: [0, 0, 60])
        _ = differing.nextStep(tubes: [0, 0, 60])
        differing.dispensed(Self.counted([0, 0, 9], reported: [0, 0, 50]))
        #expect(differing.nextStep(tubes: [0, 0, 9]) == nil)
        let settlement = differing.settlement()
        #expect(settlement.paidMinor == 1_275 && settlement.debtMinor == 225 && settlement.paidCoins == [2: 51])
        #expect(settlement.reason?.contains("PAYOUT STATUS (50×type 2) differs from its tubes' fall (51×type 2)") == true)
    }

    @Test("a value step whose tube counts do not read back from the ledger settles as unverified, not from counts taken as 0")
    func damagedTubesBefore() throws {
        let directory = TestSupport.temporaryDirectory("payout-value-damaged")
        let ledger = try Ledger(directory: directory)
        try ledger.append([.payoutRequested(PayoutRunTests.order(65), source: "mdb", plan: "2×USD25 1×USD10 1×USD5", device: "CMS 1; 0=USD5,1=USD10,2=USD25"),
                           .payoutDispensing(requestID: "r1", step: 1, .value(65, tubesBefore: [4, 3, 8]))])
        #expect(try ledger.payout(requestID: "r1")?.steps.first?.tubesBefore == [4, 3, 8])
        let values = Self.coins.mapValues(\.valueMinor)
        for damaged in ["4,x,8", "4,,8", "", "4;3;8"] {
            let queue = try DatabaseQueue(path: "\(directory)/\(Ledger.fileName)")
            try queue.write { try $0.execute(sql: "UPDATE payout_steps SET tubes_before = ? WHERE request_id = 'r1'", arguments: [damaged]) }
            let record = try #require(try ledger.payout(requestID: "r1"))
            #expect(record.steps.first?.tubesBefore == [], "\"\(damaged)\" read as \(record.steps.first?.tubesBefore ?? [])")
            // Read as 0s, the tubes' fall from them would settle as nothing paid from tube 2.
            let settlement = PayoutRun.settle(record, tubes: [4, 2, 6], reported: 16, values: values)
            #expect(settlement.paidMinor == 0 && settlement.debtMinor == 65 && settlement.reason?.contains("cannot be read") == true, "\(damaged)")
        }
    }

    @Test("a value step left open whose tubes all fell is settled at most at the payout's amount, largest coins first")
    func openValueStepCapped() {
        let order = PayoutRunTests.order(50)
        let record = PayoutRecord(order: order, source: "mdb", requestedSeq: 1, settledSeq: nil, steps: [.value(50, tubesBefore: [4, 3, 8])], settlement: nil)
        // Each tube fell within the step's value in its coin (4 nickels, 3 dimes, 2 quarters):
        // together 100, twice what was asked.
        let settlement = PayoutRun.settle(record, tubes: [0, 0, 6], reported: 16, values: Self.coins.mapValues(\.valueMinor))
        #expect(settlement.paidMinor == 50 && settlement.debtMinor == 0 && settlement.paidCoins == [2: 2])
    }

    @Test("a hopper level an operator may set (up to 100,000 coins) is a count, not damage: the open payout settles from it")
    func largeHopperLevel() {
        let order = PayoutOrder(requestID: "r1", amountMinor: 400, currency: "EUR", by: "test")
        let step = PayoutStep(type: 0, coinID: "EU200A", valueMinor: 200, count: 2, tubeBefore: 100_000)
        let record = PayoutRecord(order: order, source: "cctalk", requestedSeq: 1, settledSeq: nil, steps: [step], settlement: nil)
        let settlement = PayoutRun.settle(record, tubes: [99_998], reported: 1)
        #expect(settlement.paidMinor == 400 && settlement.debtMinor == 0 && settlement.paidCoins == [0: 2])
    }

    @Test("numbers out of range in an open payout's journal settle as unverified, and no sum overflows")
    func outOfRange() {
        let values = Self.coins.mapValues(\.valueMinor)
        let order = PayoutRunTests.order(50)
        let damaged: [(PayoutOrder, PayoutStep)] = [
            (order, PayoutStep(type: 2, coinID: "USD25", valueMinor: 25, count: .max, tubeBefore: .max)),
            (order, PayoutStep(type: 2, coinID: "USD25", valueMinor: .max, count: 2, tubeBefore: 8)),
            (order, PayoutStep(type: 2, coinID: "USD25", valueMinor: 25, count: 2, tubeBefore: .min)),
            (order, .value(.max, tubesBefore: [4, 3, 8])),
            (order, .value(50, tubesBefore: [4, .max, 8])),
            (PayoutOrder(requestID: "r1", amountMinor: .max, currency: "USD", by: "test"), PayoutStep(type: 2, coinID: "USD25", valueMinor: 25, count: 2, tubeBefore: 8)),
        ]
        for (order, step) in damaged {
            let record = PayoutRecord(order: order, source: "mdb", requestedSeq: 1, settledSeq: nil, steps: [step], settlement: nil)
            let settlement = PayoutRun.settle(record, tubes: [0, 0, 0], reported: 16, values: values)
            #expect(settlement.paidMinor == 0 && settlement.reason?.contains("check the cash") == true, "\(step)")
        }
    }
}
