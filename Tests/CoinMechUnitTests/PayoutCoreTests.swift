import CoinMechCore
import CoinMechModel
import Testing

/// The payout core on hand-made sessions: a scripted changer or bank of hoppers, a ledger in
/// memory with the real one's rules, and simulated time. Each expected figure is worked out by
/// hand from the tubes or levels given.
@Suite("The payout core: journalled before any coin moves, paid once, a failed commit read back, a payout left open settled from the device")
struct PayoutCoreTests {
    /// USD: type 0 nickel, 1 dime, 2 quarter.
    static let usd = PayoutCoins(currency: "USD", coins: [0: PayoutCoin(coinID: "USD5", valueMinor: 5), 1: PayoutCoin(coinID: "USD10", valueMinor: 10),
                                                          2: PayoutCoin(coinID: "USD25", valueMinor: 25)])

    /// The core, a ledger and a scripted device on simulated time: every output carried out as
    /// the daemon's executor does, every outcome stepped straight back in.
    struct Bench {
        enum CommitFault { case landedReportedFailed, notWritten }

        var core: PayoutCore
        var ledger: FakePayoutLedger
        var now = at(0)
        /// The device: a changer counts its units; hoppers (`hoppers`) leave the count to the ledger.
        var units: [Int]
        let hoppers: Bool
        var held = false
        var countReads: UInt64 = 0
        var identity = "CMS 1; 0=USD5,1=USD10,2=USD25"
        /// Who each unit is, where a unit names itself (a hopper).
        var unitIdentities: [Int: String] = [:]
        /// Coins a dispense of each unit pays short (a jam), and whether it says so.
        var short: [Int: Int] = [:]
        /// The count taken right after a DISPENSE shows this many coins more than the tube
        /// holds (a sensor that has not caught up); the next count is right.
        var lag = 0
        var counted: [DispenseCount] = []
        /// Faults by the commit's number (0: the first), and ledger reads that fail, by the read's.
        var commitFaults: [Int: CommitFault] = [:]
        var readFailures: Set<Int> = []
        private(set) var commits = 0
        private(set) var reads = 0
        var refuseDispenses = 0
        /// A changer that pays a value itself, at most this much a step (nil: DISPENSEs only),
        /// and the values it was asked; it pays this many coins fewer than it chose (a jam).
        var valueStepMaximum: Int64?
        var valuesAsked: [Int64] = []
        var valueShort = 0
        var account: (PayoutRecord) -> PayoutRestartAccount = { _ in .wait }
        /// What the device was asked to pay, and what it paid, per unit.
        var dispensed: [(type: Int, count: Int)] = []
        var paid: [Int: Int] = [:]
        var replies: [PayoutAnswer] = []
        var holds: [Bool] = []
        var published: [String] = []

        init(units: [Int], hoppers: Bool = false, ledger: FakePayoutLedger = FakePayoutLedger(source: "mdb")) {
            self.units = units
            self.hoppers = hoppers
            self.ledger = ledger
            core = PayoutCore(settings: Self.settings(hoppers), open: ledger.open, levels: ledger.levels, logger: .discarding)
            carry(core.start())
            // The device's first word, as every turn of the daemon hands it over.
            turn()
        }

        static func settings(_ hoppers: Bool) -> PayoutCore.Settings {
            PayoutCore.Settings(source: "mdb", capabilities: hoppers ? [.ledgerKeepsLevels, .identifies] : [.countsItsUnits, .identifies])
        }

        /// A daemon restart: the core's state is gone; the ledger and the device stay.
        mutating func restart() {
            held = false
            counted = []
            core = PayoutCore(settings: Self.settings(hoppers), open: ledger.open, levels: ledger.levels, logger: .discarding)
            carry(core.start())
            // The device's first word, as every turn of the daemon hands it over.
            turn()
        }

        var state: PayingDeviceState {
            var state = PayingDeviceState()
            state.coins = PayoutCoreTests.usd
            state.heldStill = held
            state.countReads = countReads
            if !hoppers {
                state.units = units
                state.unitsReported = 16
            }
            state.identity = identity
            state.unitIdentities = unitIdentities
            state.valueStepMaximum = valueStepMaximum
            return state
        }

        /// One turn of the loop at `now`.
        mutating func turn() {
            let dispensed = counted
            counted = []
            carry(core.step(.device(state, dispensed: dispensed), at: now))
        }

        mutating func ask(_ amount: Int64, _ id: String, currency: String? = nil) {
            carry(core.step(.payout(PayoutRequest(requestID: id, amountMinor: amount, currency: currency, by: "test"), ticket: Ticket(1)), at: now))
        }

        /// Turns until nothing is held or `turns` have passed, 100 ms apart.
        mutating func run(turns: Int = 50) {
            for _ in 0..<turns {
                turn()
                now = now + .milliseconds(100)
                if !held && core.snapshot.paying == nil { break }
            }
        }

        mutating func carry(_ outputs: [PayoutOutput]) {
            for output in outputs {
                switch output {
                case .hold(let on):
                    held = on
                    holds.append(on)
                case .count:
                    countReads += 1
                case .dispense(let type, let count):
                    if refuseDispenses > 0 {
                        refuseDispenses -= 1
                        carry(core.step(.dispenseSent(false), at: now))
                        continue
                    }
                    dispensed.append((type, count))
                    let pays = min(max(count - short[type, default: 0], 0), units[type])
                    units[type] -= pays
                    paid[type, default: 0] += pays
                    var seen = units
                    seen[type] += lag
                    counted.append(DispenseCount(type: type, count: count, tubes: hoppers ? [] : seen, jammed: pays < count, uncertain: false,
                                                 devicePaid: hoppers ? pays : nil, deviceUnpaid: hoppers ? count - pays : nil))
                    carry(core.step(.dispenseSent(true), at: now))
                case .payValue(let value):
                    valuesAsked.append(value)
                    // The changer's own choice: the largest coin that still fits, as coinsim's.
                    var left = value, chosen: [Int] = []
                    var held = units
                    while let type = [2, 1, 0].first(where: { PayoutCoreTests.usd.coins[$0]!.valueMinor <= left && held[$0] > 0 }) {
                        left -= PayoutCoreTests.usd.coins[type]!.valueMinor
                        held[type] -= 1
                        chosen.append(type)
                    }
                    for type in chosen.dropLast(min(valueShort, chosen.count)) {
                        units[type] -= 1
                        paid[type, default: 0] += 1
                    }
                    var seen = units
                    if let type = chosen.last { seen[type] += lag }
                    counted.append(DispenseCount(type: PayoutStep.anyType, count: 1, tubes: seen, jammed: valueShort > 0, uncertain: false))
                    carry(core.step(.dispenseSent(true), at: now))
                case .askAccount(let record):
                    carry(core.step(.account(account(record)), at: now))
                case .lookUp(let requestID, let moves):
                    reads += 1
                    if readFailures.contains(reads - 1) {
                        carry(core.step(.lookedUp(.failure(.read(message: "disk I/O error"))), at: now))
                    } else {
                        carry(core.step(.lookedUp(.success(ledger.lookUp(requestID: requestID, moves: moves))), at: now))
                    }
                case .commit(let entries):
                    commits += 1
                    if let fault = commitFaults[commits - 1] {
                        if fault == .landedReportedFailed { _ = try? ledger.append(entries) }
                        carry(core.step(.commitFailed(.write(message: "disk I/O error")), at: now))
                        continue
                    }
                    do throws(LedgerError) {
                        let result = try ledger.append(entries)
                        carry(core.step(.committed(result), at: now))
                    } catch {
                        carry(core.step(.commitFailed(error), at: now))
                    }
                case .publish(let events):
                    published += events.map(\.kind)
                case .reply(_, let answer):
                    replies.append(answer)
                case .failpoint:
                    break
                }
            }
        }

        var settled: PayoutRecord? {
            guard case .payout(let record, _, _)? = replies.last else { return nil }
            return record
        }
    }

    @Test("0.65 from 8 quarters, 3 dimes: the request and its first step commit before the DISPENSE; each step is journalled before it goes out; done")
    func payoutJournalledFirst() throws {
        var bench = Bench(units: [0, 3, 8])
        bench.ask(65, "r1")
        #expect(bench.holds == [true])
        bench.run()
        // No nickels: 65 is 25a + 10b with b ≤ 3, which no a makes (65, 40 and 15 are not dimes).
        // Nearest: 60 (2 quarters, a dime) below, 70 (2 quarters, 2 dimes) above.
        #expect(bench.replies == [.refused(PayoutOrder(requestID: "r1", amountMinor: 65, currency: "USD", by: "test"), nearestBelow: 60, nearestAbove: 70)])
        #expect(bench.ledger.payouts.isEmpty, "a refusal journals nothing")
        #expect(bench.holds == [true, false])

        bench.units = [2, 3, 8]
        bench.ask(65, "r2")
        bench.run()
        let record = try #require(bench.settled)
        // 2 quarters, 1 dime, 1 nickel: 4 coins, the fewest that make 65.
        #expect(record.settlement?.outcome == .done && record.settlement?.paidMinor == 65 && record.settlement?.paidCoins == [2: 2, 1: 1, 0: 1])
        #expect(bench.dispensed.map(\.type) == [2, 1, 0] && bench.dispensed.map(\.count) == [2, 1, 1])
        // Every DISPENSE came after the commit of its step: the ledger's steps came first.
        #expect(bench.ledger.commits == [["payout_requested", "payout_dispensing"], ["payout_dispensing"], ["payout_dispensing"], ["payout_done"]])
        #expect(bench.units == [1, 2, 6] && bench.holds.last == false)
    }

    @Test("a request id asked again is answered from the ledger, never paid again; the same id for another amount is refused")
    func repeatAnsweredFromLedger() throws {
        var bench = Bench(units: [0, 5, 8])
        bench.ask(50, "sale-1")
        bench.run()
        #expect(bench.settled?.settlement?.paidMinor == 50)
        let paid = bench.paid
        bench.ask(50, "sale-1")
        guard case .payout(let again, _, let repeated)? = bench.replies.last else { Issue.record("no answer"); return }
        #expect(repeated && again.settlement?.paidMinor == 50)
        bench.ask(75, "sale-1")
        guard case .badRequest(let why)? = bench.replies.last else { Issue.record("another amount under the same id was taken"); return }
        #expect(why.contains("names one payout"))
        bench.run()
        #expect(bench.paid == paid, "nothing paid for the repeats")
    }

    @Test("a step whose commit landed but reported a failure is read back and goes out once; the payout settles in this run")
    func landedReportedFailedGoesOutOnce() throws {
        var bench = Bench(units: [0, 0, 30])
        // The request and its first step land, and the ledger says it failed.
        bench.commitFaults = [0: .landedReportedFailed]
        bench.ask(500, "r1")  // 20 quarters: steps of 15 and 5
        bench.run()
        #expect(bench.settled?.settlement?.outcome == .done && bench.settled?.settlement?.paidMinor == 500)
        #expect(bench.dispensed.map(\.count) == [15, 5], "each step sent once")
        #expect(bench.paid == [2: 20])
        #expect(bench.ledger.payouts["r1"]?.steps.count == 2)
    }

    @Test("a step whose commit did not land is not sent: the payout ends with the rest owed, on the record")
    func notWrittenIsNotSent() throws {
        var bench = Bench(units: [0, 0, 30])
        bench.commitFaults = [1: .notWritten]  // the second step's
        bench.ask(500, "r1")
        bench.run()
        let settlement = try #require(bench.settled?.settlement)
        #expect(bench.dispensed.map(\.count) == [15])
        #expect(settlement.outcome == .partial && settlement.paidMinor == 375 && settlement.debtMinor == 125)
        #expect(settlement.reason?.contains("not sent") == true)
        #expect(bench.ledger.payouts["r1"]?.settlement == settlement)
    }

    @Test("a settlement whose commit fails and cannot be read back keeps the device held; it is written once the ledger can")
    func settlementWaitsForTheLedger() throws {
        var bench = Bench(units: [0, 2, 0])
        // The settlement fails, and the ledger cannot be read back three times.
        bench.commitFaults = [1: .notWritten]
        bench.readFailures = [1, 2, 3]
        bench.ask(20, "r1")
        for _ in 0..<3 {
            bench.turn()
            #expect(bench.held, "held until the settlement is written")
            bench.now = bench.now + .milliseconds(1100)
        }
        bench.run()
        #expect(bench.settled?.settlement?.outcome == .done)
        #expect(!bench.held && bench.paid == [1: 2])
    }

    @Test("a payout left open is held from the start and settled from the same changer's count; another changer settles nothing as paid")
    func leftOpenSettledFromTheDevice() throws {
        var ledger = FakePayoutLedger(source: "mdb")
        let order = PayoutOrder(requestID: "r9", amountMinor: 50, currency: "USD", by: "test")
        _ = try ledger.append([.payoutRequested(order, source: "mdb", plan: "2×USD25", device: "CMS 1; 0=USD5,1=USD10,2=USD25"),
                               .payoutDispensing(requestID: "r9", step: 1, PayoutStep(type: 2, coinID: "USD25", valueMinor: 25, count: 2, tubeBefore: 8))])
        // The changer paid one quarter before the daemon died.
        var bench = Bench(units: [0, 0, 7], ledger: ledger)
        #expect(bench.holds == [true], "held from before its setup")
        let units = bench.units
        bench.account = { _ in .tubes(units, reported: 16) }
        bench.ask(25, "r10")
        guard case .unavailable? = bench.replies.last else { Issue.record("a payout began while one was left open"); return }
        bench.run()
        let settled = try #require(bench.ledger.payouts["r9"]?.settlement)
        #expect(settled.paidMinor == 25 && settled.debtMinor == 25 && settled.afterRestart && settled.outcome == .partial)
        #expect(bench.holds == [true, false] && bench.dispensed.isEmpty, "nothing dispensed again")

        // Another changer at the address: its count says nothing of the payout.
        var other = FakePayoutLedger(source: "mdb")
        _ = try other.append([.payoutRequested(order, source: "mdb", plan: "2×USD25", device: "CMS 1; 0=USD5,1=USD10,2=USD25"),
                              .payoutDispensing(requestID: "r9", step: 1, PayoutStep(type: 2, coinID: "USD25", valueMinor: 25, count: 2, tubeBefore: 8))])
        var exchanged = Bench(units: [0, 0, 7], ledger: other)
        exchanged.identity = "CMS 2; 0=USD5,1=USD10,2=USD25"
        exchanged.account = { _ in .tubes(units, reported: 16) }
        exchanged.run()
        let unverified = try #require(exchanged.ledger.payouts["r9"]?.settlement)
        #expect(unverified.paidMinor == 0 && unverified.debtMinor == 50 && unverified.reason?.contains("not the one that paid") == true)
    }

    @Test("hoppers: the level is the ledger's; what a step paid rides with the next write, and a move that landed is counted once")
    func hopperLevelsMoveOnce() throws {
        var ledger = FakePayoutLedger(source: "cctalk")
        _ = try ledger.append([.inventory(InventoryChange(source: "cctalk", unit: 2, coinID: "USD25", valueMinor: 25, kind: .set(level: 20, by: "test", requestID: "f1")))])
        var bench = Bench(units: [0, 0, 20], hoppers: true, ledger: ledger)
        bench.unitIdentities = [2: "5:900:USD25"]
        // The second step's commit carries the first step's move; it lands and reports a failure.
        bench.commitFaults = [1: .landedReportedFailed]
        bench.ask(500, "r1")  // 20 quarters: 15 and 5
        bench.run()
        #expect(bench.settled?.settlement?.paidMinor == 500)
        #expect(bench.ledger.levels[2]?.level == 0, "20 - 15 - 5, each step counted once: \(bench.ledger.commits)")
        #expect(bench.core.levels?[2] == 0)
        #expect(bench.ledger.commits.filter { $0.contains("inventory_paid") }.count == 2)
        // Each step names the hopper that was to pay it.
        #expect(bench.ledger.payouts["r1"]?.steps.map(\.device) == ["5:900:USD25", "5:900:USD25"])
    }

    @Test("refill and float: once per request id; one that landed but reported a failure moves the level once; a changer has none")
    func operatorInventory() throws {
        var bench = Bench(units: [0, 0, 0], hoppers: true)
        bench.turn()
        bench.carry(bench.core.step(.inventory(InventoryRequest(unit: "USD25", kind: .float(level: 10), requestID: "count-1", by: "op"), ticket: Ticket(2)),
                                    at: bench.now))
        #expect(bench.core.levels?[2] == 10)
        bench.commitFaults = [bench.commits: .landedReportedFailed]
        bench.carry(bench.core.step(.inventory(InventoryRequest(unit: "2", kind: .refill(coins: 5), requestID: "load-1", by: "op"), ticket: Ticket(3)),
                                    at: bench.now))
        guard case .inventory(let done, let repeated)? = bench.replies.last else { Issue.record("no answer: \(bench.replies)"); return }
        #expect(!repeated && done.levelBefore == 10 && done.level == 15)
        #expect(bench.core.levels?[2] == 15 && bench.ledger.levels[2]?.level == 15)
        bench.carry(bench.core.step(.inventory(InventoryRequest(unit: "2", kind: .refill(coins: 5), requestID: "load-1", by: "op"), ticket: Ticket(4)),
                                    at: bench.now))
        guard case .inventory(_, true)? = bench.replies.last else { Issue.record("a repeat was counted again"); return }
        #expect(bench.core.levels?[2] == 15)
        bench.carry(bench.core.step(.inventory(InventoryRequest(unit: "2", kind: .refill(coins: 6), requestID: "load-1", by: "op"), ticket: Ticket(5)),
                                    at: bench.now))
        guard case .badRequest? = bench.replies.last else { Issue.record("one id was taken for two actions"); return }

        var changer = Bench(units: [1, 1, 1])
        changer.turn()
        changer.carry(changer.core.step(.inventory(InventoryRequest(unit: "2", kind: .refill(coins: 5), requestID: "load-2", by: "op"), ticket: Ticket(2)),
                                        at: changer.now))
        guard case .unavailable? = changer.replies.last else { Issue.record("a changer's tube took a refill"); return }
    }

    @Test("a count short of its DISPENSE is counted again: a lagging tube sensor does not leave coins paid off the record")
    func shortCountRecounted() throws {
        var bench = Bench(units: [0, 0, 10])
        bench.lag = 1  // the count after the DISPENSE says 8 of 10 quarters left; 7 are
        bench.ask(75, "r1")
        bench.run()
        let settlement = try #require(bench.settled?.settlement)
        #expect(settlement.outcome == .done && settlement.paidMinor == 75 && bench.paid == [2: 3])
        #expect(bench.countReads == 2, "the plan's count, and the count again after the short one")
    }

    @Test("a DISPENSE the device cannot take is not sent: settled with the rest owed")
    func dispenseRefused() throws {
        var bench = Bench(units: [0, 4, 0])
        bench.refuseDispenses = 1
        bench.ask(40, "r1")
        bench.run()
        let settlement = try #require(bench.settled?.settlement)
        #expect(settlement.outcome == .failed && settlement.debtMinor == 40 && bench.paid.isEmpty)
    }

    @Test("stopping: no new payout; the one under way settles what was paid, the rest owed")
    func stopMidPayout() throws {
        var bench = Bench(units: [0, 0, 30])
        bench.ask(500, "r1")
        bench.turn()
        bench.turn()
        bench.carry(bench.core.step(.stop, at: bench.now))
        bench.run()
        let settlement = try #require(bench.settled?.settlement)
        #expect(settlement.paidMinor == 375 && settlement.debtMinor == 125 && bench.dispensed.count == 1)
        bench.ask(25, "r2")
        guard case .unavailable(let why)? = bench.replies.last else { Issue.record("a payout began while stopping"); return }
        #expect(why.contains("stopping"))
    }

    @Test("a changer that pays a value: one value step journalled with every tube's count before it, paid in its own coins, settled from the tubes' fall")
    func valueStep() throws {
        var bench = Bench(units: [4, 3, 8])
        bench.valueStepMaximum = 1_275
        bench.ask(65, "r1")
        bench.run()
        // The changer's choice (worked by hand): 25 + 25 + 10 + 5.
        #expect(bench.valuesAsked == [65] && bench.dispensed.isEmpty)
        #expect(bench.paid == [2: 2, 1: 1, 0: 1])
        let record = try #require(bench.ledger.payouts["r1"])
        #expect(record.steps.count == 1 && record.steps[0].paysValue && record.steps[0].tubesBefore == [4, 3, 8] && record.steps[0].valueMinor == 65)
        let settlement = try #require(record.settlement)
        #expect(settlement.outcome == .done && settlement.paidMinor == 65 && settlement.paidCoins == [2: 2, 1: 1, 0: 1])
    }

    @Test("value steps are split at the changer's maximum, each journalled before it goes out")
    func valueStepsSplit() throws {
        var bench = Bench(units: [4, 3, 8])
        bench.valueStepMaximum = 50
        bench.ask(65, "r1")
        bench.run()
        #expect(bench.valuesAsked == [50, 15])
        let record = try #require(bench.ledger.payouts["r1"])
        #expect(record.steps.map(\.valueMinor) == [50, 15])
        #expect(record.steps[1].tubesBefore == [4, 3, 6], "the second step counted after the first paid 2 quarters")
        #expect(record.settlement?.paidMinor == 65 && record.settlement?.outcome == .done)
    }

    @Test("a value step that pays short is counted again, then settled with the rest owed; nothing more is paid on it")
    func valueStepShort() throws {
        var bench = Bench(units: [4, 3, 8])
        bench.valueStepMaximum = 1_275
        bench.valueShort = 1  // the nickel it chose jams
        bench.ask(65, "r1")
        bench.run()
        #expect(bench.valuesAsked == [65])
        let settlement = try #require(bench.settled?.settlement)
        #expect(settlement.outcome == .partial && settlement.paidMinor == 60 && settlement.debtMinor == 5)
        #expect(settlement.reason?.contains("paid 60 of a value step of 65") == true)
        #expect(bench.countReads == 2, "the plan's count, and the count again after the short one")
    }

    @Test("a value step left open by a dead daemon is settled from every tube's fall, by the changer that paid it")
    func valueStepLeftOpen() throws {
        var ledger = FakePayoutLedger(source: "mdb")
        let order = PayoutOrder(requestID: "r9", amountMinor: 65, currency: "USD", by: "test")
        _ = try ledger.append([.payoutRequested(order, source: "mdb", plan: "2×USD25 1×USD10 1×USD5", device: "CMS 1; 0=USD5,1=USD10,2=USD25"),
                               .payoutDispensing(requestID: "r9", step: 1, .value(65, tubesBefore: [4, 3, 8]))])
        // It paid two quarters and the dime before the daemon died; the nickel jammed.
        var bench = Bench(units: [4, 2, 6], ledger: ledger)
        let units = bench.units
        bench.account = { _ in .tubes(units, reported: 16) }
        bench.run()
        let settled = try #require(bench.ledger.payouts["r9"]?.settlement)
        #expect(settled.paidMinor == 60 && settled.debtMinor == 5 && settled.afterRestart && settled.paidCoins == [2: 2, 1: 1])
        #expect(bench.dispensed.isEmpty && bench.valuesAsked.isEmpty, "nothing paid again")
    }
}
