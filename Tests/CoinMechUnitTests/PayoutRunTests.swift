import CoinMechCore
import CoinMechLedger
import CoinMechModel
import CoinMechSources
@testable import CoinMechTestSupport
import Testing

/// A payout's steps and settlement from the changer's tube counts, and the journal that keeps
/// it paid once: each figure is worked out by hand from the tubes given.
@Suite("Payouts: steps of at most 15 coins, paid as the tubes fall, settled once, never paid twice")
struct PayoutRunTests {
    /// USD: type 0 nickel, 1 dime, 2 quarter.
    static let coins: [Int: PayoutCoin] = [0: PayoutCoin(coinID: "USD5", valueMinor: 5), 1: PayoutCoin(coinID: "USD10", valueMinor: 10),
                                           2: PayoutCoin(coinID: "USD25", valueMinor: 25)]

    /// The changer's count after the last step.
    static func counted(_ run: PayoutRun, _ tubes: [Int], jammed: Bool = false, uncertain: Bool = false) -> DispenseCount {
        DispenseCount(type: run.steps.last!.type, count: run.steps.last!.count, tubes: tubes, jammed: jammed, uncertain: uncertain)
    }

    static func order(_ amount: Int64, _ id: String = "r1") -> PayoutOrder {
        PayoutOrder(requestID: id, amountMinor: amount, currency: "USD", by: "test")
    }

    @Test("20 quarters are two DISPENSEs, 15 and 5, each journalled with its tube's count before it")
    func stepsOfFifteen() {
        var run = PayoutRun(order: Self.order(500), coins: Self.coins)
        var tubes = [0, 0, 30]
        #expect(run.plan(tubes: tubes) == .exact("20×USD25"))
        let first = run.nextStep(tubes: tubes)
        #expect(first == PayoutStep(type: 2, coinID: "USD25", valueMinor: 25, count: 15, tubeBefore: 30))
        tubes[2] = 15
        run.dispensed(Self.counted(run, tubes))
        let second = run.nextStep(tubes: tubes)
        #expect(second == PayoutStep(type: 2, coinID: "USD25", valueMinor: 25, count: 5, tubeBefore: 15))
        tubes[2] = 10
        run.dispensed(Self.counted(run, tubes))
        #expect(run.nextStep(tubes: tubes) == nil)
        let settlement = run.settlement()
        #expect(settlement.outcome == .done && settlement.paidMinor == 500 && settlement.debtMinor == 0 && settlement.paidCoins == [2: 20])
    }

    @Test("a tube that jams is taken out and the rest planned from the others; what none can pay is owed")
    func jammedStepReplans() {
        // 0.35 as a quarter and a dime; the quarter tube jams after 0 coins: 35 from dimes and
        // nickels is 3 dimes and a nickel.
        var run = PayoutRun(order: Self.order(35), coins: Self.coins)
        var tubes = [4, 5, 3]
        #expect(run.plan(tubes: tubes) == .exact("1×USD25 1×USD10"))
        #expect(run.nextStep(tubes: tubes)?.type == 2)
        run.dispensed(Self.counted(run, tubes, jammed: true))  // nothing fell
        var steps: [PayoutStep] = []
        while let step = run.nextStep(tubes: tubes) {
            steps.append(step)
            tubes[step.type] -= step.count
            run.dispensed(Self.counted(run, tubes))
        }
        #expect(steps.map(\.type) == [1, 0] && steps.map(\.count) == [3, 1])
        #expect(run.settlement().outcome == .done && run.settlement().paidMinor == 35)

        // 0.30 from one quarter and one nickel: the nickel jams, nothing else makes 5.
        var short = PayoutRun(order: Self.order(30), coins: Self.coins)
        var held = [1, 0, 1]
        #expect(short.plan(tubes: held) == .exact("1×USD25 1×USD5"))
        #expect(short.nextStep(tubes: held)?.type == 2)
        held[2] = 0
        short.dispensed(Self.counted(short, held))
        #expect(short.nextStep(tubes: held)?.type == 0)
        short.dispensed(Self.counted(short, held, jammed: true))
        #expect(short.nextStep(tubes: held) == nil)
        let settlement = short.settlement()
        #expect(settlement.outcome == .partial && settlement.paidMinor == 25 && settlement.debtMinor == 5)
        #expect(settlement.reason?.contains("USD5: 0 of 1 paid (jam reported)") == true, "\(settlement)")

        // 3 dimes asked; 2 fall and the third stays with nothing said of why: the dime is owed,
        // never paid from another tube. All 3 falling is all paid.
        var empty = PayoutRun(order: Self.order(30), coins: Self.coins)
        #expect(empty.plan(tubes: [0, 3, 0]) == .exact("3×USD10"))
        _ = empty.nextStep(tubes: [0, 3, 0])
        empty.dispensed(Self.counted(empty, [0, 1, 0]))
        #expect(empty.nextStep(tubes: [0, 1, 0]) == nil)
        #expect(empty.settlement().paidMinor == 20 && empty.settlement().reason?.contains("with no jam or empty tube reported") == true)
        var emptied = PayoutRun(order: Self.order(30), coins: Self.coins)
        _ = emptied.plan(tubes: [2, 3, 0])
        _ = emptied.nextStep(tubes: [2, 3, 0])
        emptied.dispensed(Self.counted(emptied, [2, 0, 0]))  // 3 asked, 3 paid
        #expect(emptied.settlement().paidMinor == 30)
    }

    @Test("a short fall the changer does not explain, or a count something else may have moved, ends the payout: nothing more paid on it")
    func unexplainedShortStops() {
        for (jammed, uncertain) in [(false, false), (false, true)] {
            var run = PayoutRun(order: Self.order(35), coins: Self.coins)
            var tubes = [4, 5, 3]
            _ = run.plan(tubes: tubes)
            _ = run.nextStep(tubes: tubes)
            tubes[2] = 3  // the quarter tube did not fall, and says nothing of why
            run.dispensed(Self.counted(run, tubes, jammed: jammed, uncertain: uncertain))
            #expect(run.nextStep(tubes: tubes) == nil, "paid again from other tubes on a count that may be wrong")
            let settlement = run.settlement()
            #expect(settlement.outcome == .failed && settlement.debtMinor == 35, "\(settlement)")
        }
        // A count that does not match the step (another DISPENSE's) ends it too.
        var run = PayoutRun(order: Self.order(35), coins: Self.coins)
        _ = run.plan(tubes: [4, 5, 3])
        _ = run.nextStep(tubes: [4, 5, 3])
        run.dispensed(DispenseCount(type: 1, count: 1, tubes: [4, 4, 2], jammed: false, uncertain: false))
        #expect(run.nextStep(tubes: [4, 4, 2]) == nil && run.settlement().paidMinor == 0)
    }

    @Test("an amount the tubes cannot make is refused before any step")
    func refused() {
        var run = PayoutRun(order: Self.order(35), coins: Self.coins)
        #expect(run.plan(tubes: [0, 0, 4]) == .cannotPayExact(below: 25, above: 50))
        #expect(run.nextStep(tubes: [0, 0, 4]) == nil)
    }

    @Test("after a crash: each tube's fall from its first step's count, up to what its steps asked", arguments: [
        // (tubes now, paid coins, outcome): 15+5 quarters asked from 30, 3 dimes from 9. A
        // tube above its count before (refilled while no daemon ran) paid nothing from it.
        ([9, 9, 30], [Int: Int](), PayoutSettlement.Outcome.failed),  // nothing fell: not paid
        ([9, 6, 10], [1: 3, 2: 20], .done),                            // all fell
        ([9, 9, 18], [2: 12], .partial),                               // stopped in the first DISPENSE
        ([9, 9, 2], [2: 20], .partial),                                 // fell more than asked (by hand): 20 at most
        ([9, 12, 40], [:], .failed),                                    // both rose: refilled, not paid from
    ])
    func settleAfterCrash(tubes: [Int], paid: [Int: Int], outcome: PayoutSettlement.Outcome) {
        let record = PayoutRecord(order: Self.order(530), source: "mdb", requestedSeq: 1, settledSeq: nil, steps: [
            PayoutStep(type: 2, coinID: "USD25", valueMinor: 25, count: 15, tubeBefore: 30),
            PayoutStep(type: 2, coinID: "USD25", valueMinor: 25, count: 5, tubeBefore: 15),
            PayoutStep(type: 1, coinID: "USD10", valueMinor: 10, count: 3, tubeBefore: 9),
        ], settlement: nil)
        let settlement = PayoutRun.settle(record, tubes: tubes)
        #expect(settlement.paidCoins == paid)
        #expect(settlement.outcome == outcome)
        let value = Int64(paid[2, default: 0]) * 25 + Int64(paid[1, default: 0]) * 10
        #expect(settlement.paidMinor == value && settlement.debtMinor == 530 - value && settlement.afterRestart)
    }

    @Test("after a crash, a count short of a tube paid from settles nothing as paid; an unverifiable one owes the whole amount")
    func settleUnverified() {
        var record = PayoutRecord(order: Self.order(25), source: "mdb", requestedSeq: 1, settledSeq: nil, steps: [
            PayoutStep(type: 2, coinID: "USD25", valueMinor: 25, count: 1, tubeBefore: 8),
        ], settlement: nil)
        record.device = "CMS 000000000001; 0=USD5,1=USD10,2=USD25"
        let same = PayoutRun.settle(record, tubes: [9, 9, 7], reported: 16)
        #expect(same.outcome == .done && same.paidMinor == 25)
        let other = PayoutRun.unverified(record, "the device at the address is not the one that paid")
        #expect(other.paidMinor == 0 && other.debtMinor == 25 && other.reason?.contains("not the one that paid") == true)
        let short = PayoutRun.settle(record, tubes: [9, 9, 0], reported: 2)
        #expect(short.paidMinor == 0 && short.reason?.contains("does not cover the tube of type 2") == true)
    }

    @Test("the journal: a request id is taken once, a step needs an open payout, a payout is settled once")
    func journalOnce() throws {
        let ledger = try Ledger(directory: TestSupport.temporaryDirectory("payout-journal"))
        let step = PayoutStep(type: 2, coinID: "USD25", valueMinor: 25, count: 2, tubeBefore: 7)
        try ledger.append([.payoutRequested(Self.order(50), source: "mdb", plan: "2×USD25", device: "CMS 1; 2=USD25"), .payoutDispensing(requestID: "r1", step: 1, step)])
        #expect(try ledger.openPayouts(source: "mdb").map(\.order.requestID) == ["r1"])
        #expect(throws: LedgerError.self) { try ledger.append([.payoutRequested(Self.order(50), source: "mdb", plan: "2×USD25", device: "CMS 1; 2=USD25")]) }
        let done = PayoutSettlement(outcome: .done, paidMinor: 50, debtMinor: 0, paidCoins: [2: 2], reason: nil, afterRestart: false)
        try ledger.append([.payoutSettled(requestID: "r1", done)])
        #expect(throws: LedgerError.self) { try ledger.append([.payoutSettled(requestID: "r1", done)]) }
        #expect(throws: LedgerError.self) { try ledger.append([.payoutDispensing(requestID: "r1", step: 2, step)]) }
        let record = try #require(try ledger.payout(requestID: "r1"))
        #expect(record.settlement == done && record.steps == [step] && !record.isOpen)
        #expect(try ledger.openPayouts(source: "mdb").isEmpty)
        // A refused transaction leaves nothing: the events are requested, dispensing, done.
        #expect(try ledger.events(since: 0).map(\.kind) == ["payout_requested", "payout_dispensing", "payout_done"])
    }
}
