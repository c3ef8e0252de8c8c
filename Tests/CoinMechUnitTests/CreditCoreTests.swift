import CoinMechCore
import CoinMechLedger
import CoinMechModel
@testable import CoinMechTestSupport
import Foundation
import Testing

/// The credit core against a real ledger: a sale approved once per request id and never beyond
/// the credit, answered from the ledger across a restart and a commit that reported a failure;
/// refunds; the credit paid back through the payout core, or kept where nothing pays.
/// Balances are summed by hand from the quarters each test puts in.
@Suite("The credit core: a sale once per request id, never beyond the credit; refunds; the credit paid back as change")
struct CreditCoreTests {
    /// Carries out the core's outputs as the daemon's executor would, on a real ledger; the
    /// payout core is played by `payoutAnswer`, and commits can land and report a failure, or
    /// not land.
    struct Bench {
        let ledger: Ledger
        var core: CreditCore
        var replies: [CreditAnswer] = []
        var payouts: [PayoutRequest] = []
        var published: [LedgerEvent] = []
        var commitFault: CommitFault?
        var payoutAnswer: (PayoutRequest) -> PayoutAnswer? = { _ in nil }
        private var tickets: UInt64 = 0
        /// The core's clock: what every input is stepped in at (a tick moves it).
        var now = Instant(nanoseconds: 1_000_000_000)

        enum CommitFault { case landedReportedFailed, notWritten }

        init(_ name: String, paysOut: Bool = true, ledger: Ledger? = nil, standing: StandingCredit = .keep) throws {
            self.ledger = try ledger ?? Ledger(directory: TestSupport.temporaryDirectory(name))
            var settings = CreditCore.Settings(source: "serial", currencies: ["USD"], paysOut: paysOut)
            settings.standing = standing
            core = CreditCore(settings: settings)
            let outputs = core.start()
            carry(outputs)
        }

        /// Quarters credited at once.
        func quarters(_ numbers: ClosedRange<UInt64>) throws {
            try ledger.append(numbers.map { number in
                guard case .decision(let record, _) = LedgerFixtures.quarter(number) else { preconditionFailure("a decision") }
                return .decision(record, credit: .atOnce)
            })
        }

        var balance: Int64? { try? ledger.creditAccounts(source: "serial").first?.balanceMinor }

        /// A tick `seconds` into the test, on the core's monotonic clock (from `now`).
        mutating func tick(at seconds: Double) {
            now = Instant(nanoseconds: 1_000_000_000) + .seconds(seconds)
            carry(core.step(.tick, at: now))
        }

        @discardableResult
        mutating func ask(_ command: CreditCommand) -> CreditAnswer? {
            tickets += 1
            let before = replies.count
            carry(core.step(.command(command, ticket: Ticket(tickets)), at: now))
            return replies.count > before ? replies.last : nil
        }

        mutating func carry(_ outputs: [CreditOutput]) {
            var pending = outputs
            while !pending.isEmpty {
                switch pending.removeFirst() {
                case .lookUp(let requestID):
                    let result: Result<CreditLookup, LedgerError>
                    do {
                        result = .success(CreditLookup(accounts: try ledger.creditAccounts(source: "serial"), moves: try ledger.creditMoves(requestID: requestID),
                                                       payout: try ledger.payout(requestID: requestID)))
                    } catch {
                        result = .failure(error)
                    }
                    pending.insert(contentsOf: core.step(.lookedUp(result), at: now), at: 0)
                case .commit(let entries):
                    let fault = commitFault
                    commitFault = nil
                    if fault == .notWritten {
                        pending.insert(contentsOf: core.step(.commitFailed(.write(message: "disk I/O error")), at: now), at: 0)
                        continue
                    }
                    do throws(LedgerError) {
                        let result = try ledger.append(entries)
                        let input: CreditInput = fault == .landedReportedFailed ? .commitFailed(.write(message: "disk I/O error")) : .committed(result)
                        pending.insert(contentsOf: core.step(input, at: now), at: 0)
                    } catch {
                        pending.insert(contentsOf: core.step(.commitFailed(error), at: now), at: 0)
                    }
                case .payout(let request):
                    payouts.append(request)
                    if let answer = payoutAnswer(request) { pending.insert(contentsOf: core.step(.payoutAnswered(answer), at: now), at: 0) }
                case .publish(let events):
                    published += events
                case .reply(_, let answer):
                    replies.append(answer)
                }
            }
        }
    }

    static func spend(_ id: String, _ amount: Int64, item: String? = "B4", currency: String? = nil) -> CreditCommand {
        .spend(requestID: id, amountMinor: amount, currency: currency, item: item, by: "kiosk")
    }

    @Test("a sale is approved once per request id; asked again, even by a new core after a restart, it is answered from the ledger")
    func spendOnce() throws {
        var bench = try Bench("credit-core-once")
        try bench.quarters(1...4)
        guard case .spent(let first, false)? = bench.ask(Self.spend("s1", 60)) else { Issue.record("not approved: \(bench.replies)"); return }
        #expect(first.balanceAfterMinor == 40 && first.move.amountMinor == 60 && bench.balance == 40)
        #expect(bench.published.map(\.kind).suffix(1) == ["credit_spent"])
        guard case .spent(let again, true)? = bench.ask(Self.spend("s1", 60)) else { Issue.record("not answered from the ledger: \(bench.replies)"); return }
        #expect(again == first && bench.balance == 40)

        var restarted = try Bench("credit-core-once", ledger: bench.ledger)
        guard case .spent(let afterRestart, true)? = restarted.ask(Self.spend("s1", 60)) else { Issue.record("\(restarted.replies)"); return }
        #expect(afterRestart == first && restarted.balance == 40)
    }

    @Test("a sale beyond the credit is refused with the balance, and records nothing")
    func short() throws {
        var bench = try Bench("credit-core-short")
        try bench.quarters(1...2)
        let last = try bench.ledger.lastSeq()
        let refused = bench.ask(Self.spend("s1", 75))
        #expect(refused == .short(balanceMinor: 50, currency: "USD"))
        #expect(try bench.ledger.lastSeq() == last && bench.balance == 50)
        // The id stays free: asked again once the credit covers it, it is approved.
        try bench.quarters(3...3)
        guard case .spent(_, false)? = bench.ask(Self.spend("s1", 75)) else { Issue.record("\(bench.replies)"); return }
        #expect(bench.balance == 0)
    }

    @Test("bad input is refused naming its field, and changes nothing", arguments: [
        (CreditCoreTests.spend("s9", 0), "amount_minor"), (CreditCoreTests.spend("s9", -25), "amount_minor"),
        (CreditCoreTests.spend("s9", 25, item: ""), "item"), (CreditCoreTests.spend("s9", 25, item: String(repeating: "x", count: 65)), "item"),
        (CreditCoreTests.spend("s9", 25, currency: "EUR"), "currency"),
        (CreditCoreTests.spend("s1", 30), "request_id"), (CreditCoreTests.spend("s1", 25, item: "C1"), "request_id"),
        (CreditCommand.refund(requestID: "never", by: "kiosk"), "request_id"), (CreditCommand.cancel(requestID: "s1", by: "kiosk"), "request_id"),
    ])
    func badInput(command: CreditCommand, field: String) throws {
        var bench = try Bench("credit-core-bad")
        try bench.quarters(1...4)
        bench.ask(Self.spend("s1", 25))
        let last = try bench.ledger.lastSeq()
        guard case .badRequest(let named, let why)? = bench.ask(command) else { Issue.record("not refused: \(bench.replies)"); return }
        #expect(named == field, "\(why)")
        #expect(try bench.ledger.lastSeq() == last && bench.balance == 75)
    }

    @Test("a sale whose commit landed but reported a failure is read back and approved once; one that did not land is not approved")
    func commitFaults() throws {
        var bench = try Bench("credit-core-faults")
        try bench.quarters(1...4)
        bench.commitFault = .landedReportedFailed
        guard case .spent(let sale, false)? = bench.ask(Self.spend("s1", 50)) else { Issue.record("\(bench.replies)"); return }
        #expect(sale.balanceAfterMinor == 50 && bench.balance == 50)
        bench.commitFault = .notWritten
        guard case .unavailable? = bench.ask(Self.spend("s2", 50)) else { Issue.record("\(bench.replies)"); return }
        let moves = try bench.ledger.creditMoves(requestID: "s2")
        #expect(bench.balance == 50 && moves.isEmpty)
        guard case .spent(_, false)? = bench.ask(Self.spend("s2", 50)) else { Issue.record("\(bench.replies)"); return }
        #expect(bench.balance == 0)
    }

    @Test("a refund puts a sale back once; asked again it is answered from the ledger")
    func refund() throws {
        var bench = try Bench("credit-core-refund")
        try bench.quarters(1...2)
        bench.ask(Self.spend("s1", 40))
        guard case .refunded(let first, false)? = bench.ask(.refund(requestID: "s1", by: "kiosk")) else { Issue.record("\(bench.replies)"); return }
        #expect(first.move.amountMinor == 40 && first.balanceAfterMinor == 50 && bench.balance == 50)
        guard case .refunded(let again, true)? = bench.ask(.refund(requestID: "s1", by: "kiosk")) else { Issue.record("\(bench.replies)"); return }
        // The sale asked again: approved once, and said to be put back (nothing to vend).
        guard case .spentAndRefunded(let sale, let refund)? = bench.ask(Self.spend("s1", 40)) else { Issue.record("\(bench.replies)"); return }
        #expect(sale.move.kind == .spent && refund == first && bench.balance == 50)
        #expect(again == first && bench.balance == 50)
    }

    @Test("cancel: the credit is asked of the payout core under the request id, journalled against the credit; asked again, the same payout")
    func cancel() throws {
        var bench = try Bench("credit-core-cancel")
        try bench.quarters(1...3)
        bench.ask(Self.spend("s1", 25))
        // The payout core journals it (its first write takes the credit) and pays it.
        let ledger = bench.ledger
        bench.payoutAnswer = { request in
            let order = PayoutOrder(requestID: request.requestID, amountMinor: request.amountMinor, currency: request.currency ?? "USD", by: request.by,
                                    creditAccount: request.creditAccount)
            if (try? ledger.payout(requestID: order.requestID)) == nil {
                _ = try? ledger.append([.payoutRequested(order, source: "serial", plan: "2×USD25", device: nil)])
            }
            guard let record = try? ledger.payout(requestID: order.requestID) else { return .unavailable("not journalled") }
            return .payout(record, coins: [:], repeated: false)
        }
        guard case .returned(.payout(let record, _, _), 0)? = bench.ask(.cancel(requestID: "c1", by: "kiosk")) else { Issue.record("\(bench.replies)"); return }
        #expect(record.order.amountMinor == 50 && record.order.creditAccount == "serial" && bench.balance == 0)
        #expect(bench.payouts.map(\.amountMinor) == [50])
        guard case .returned(.payout(let again, _, _), 0)? = bench.ask(.cancel(requestID: "c1", by: "kiosk")) else { Issue.record("\(bench.replies)"); return }
        #expect(again.order == record.order && bench.payouts.map(\.amountMinor) == [50, 50], "asked for the journalled amount: the payout core answers the repeat")
        // Nothing left: kept, nothing asked.
        let nothing = bench.ask(.cancel(requestID: "c2", by: "kiosk"))
        #expect(nothing == .kept(balanceMinor: 0, currency: "USD", reason: "there is no credit to pay back"))
    }

    @Test("cancel: what no coins make is asked at the nearest amount below, and the rest stays credit; with no payout device it all stays")
    func cancelInPart() throws {
        var bench = try Bench("credit-core-part")
        try bench.quarters(1...3)
        bench.ask(Self.spend("s1", 5))
        let ledger = bench.ledger
        bench.payoutAnswer = { request in
            let order = PayoutOrder(requestID: request.requestID, amountMinor: request.amountMinor, currency: "USD", by: request.by, creditAccount: request.creditAccount)
            guard request.amountMinor == 50 else { return .refused(order, nearestBelow: 50, nearestAbove: 75) }
            _ = try? ledger.append([.payoutRequested(order, source: "serial", plan: "2×USD25", device: nil)])
            return .payout(PayoutRecord(order: order, source: "serial", requestedSeq: 1, settledSeq: nil, steps: [], settlement: nil), coins: [:], repeated: false)
        }
        guard case .returned(_, 20)? = bench.ask(.cancel(requestID: "c1", by: "kiosk")) else { Issue.record("\(bench.replies)"); return }
        #expect(bench.payouts.map(\.amountMinor) == [70, 50])

        var none = try Bench("credit-core-none", paysOut: false)
        try none.quarters(1...1)
        let kept = none.ask(.cancel(requestID: "c1", by: "kiosk"))
        #expect(kept == .kept(balanceMinor: 25, currency: "USD", reason: "no device here pays change: the credit stays"))
        #expect(none.payouts.isEmpty && none.balance == 25)
    }

    // A payout is change, at most `PayoutPlanner.maximumAmount`: the planner traps on more. A
    // credit above it (a cabinet that takes notes, a long session) was asked whole.
    @Test("cancel: a credit above the largest payout asks for the largest, and the rest stays credit")
    func cancelAboveTheLargestPayout() throws {
        var bench = try Bench("credit-core-large")
        try bench.quarters(1...4001)
        #expect(bench.balance == 100_025)
        let ledger = bench.ledger
        bench.payoutAnswer = { request in
            let order = PayoutOrder(requestID: request.requestID, amountMinor: request.amountMinor, currency: "USD", by: request.by, creditAccount: request.creditAccount)
            _ = try? ledger.append([.payoutRequested(order, source: "serial", plan: "4000×USD25", device: nil)])
            return .payout(PayoutRecord(order: order, source: "serial", requestedSeq: 1, settledSeq: nil, steps: [], settlement: nil), coins: [:], repeated: false)
        }
        guard case .returned(_, 25)? = bench.ask(.cancel(requestID: "c1", by: "kiosk")) else { Issue.record("\(bench.replies)"); return }
        #expect(bench.payouts.map(\.amountMinor) == [100_000])
    }

    @Test("standing credit: kept by default; expired whole once untouched for its time (the monotonic clock's, from when it was first seen), once; a coin starts the time again")
    func standingExpires() throws {
        var kept = try Bench("credit-standing-keep")
        try kept.quarters(1...2)
        kept.tick(at: 0)
        kept.tick(at: 1_000_000)
        #expect(kept.balance == 50 && kept.published.allSatisfy { $0.kind != "credit_expired" })

        var bench = try Bench("credit-standing-expire", standing: .expire(afterSeconds: 600))
        try bench.quarters(1...2)
        bench.tick(at: 0)  // first seen standing
        bench.tick(at: 595)
        #expect(bench.balance == 50, "not yet")
        bench.tick(at: 601)  // the next review, 6 s on (one every 5 s)
        #expect(bench.balance == 0)
        let expiries = try bench.ledger.events(since: 0, limit: 1000).filter { $0.kind == "credit_expired" }
        #expect(expiries.count == 1 && expiries.first?.valueMinor == 50, "\(expiries)")
        // Nothing left to expire; a coin later stands on its own time.
        bench.tick(at: 10_000)
        try bench.quarters(3...3)
        bench.tick(at: 10_300)
        bench.tick(at: 10_600)
        #expect(bench.balance == 25)
        bench.tick(at: 10_901)
        #expect(bench.balance == 0)
        #expect(try bench.ledger.events(since: 0, limit: 1000).filter { $0.kind == "credit_expired" }.map(\.valueMinor) == [50, 25])
    }

    @Test("standing credit paid back: asked of the payout core once untouched for its time, under an id naming the move it stood after")
    func standingPaidBack() throws {
        var bench = try Bench("credit-standing-payback", standing: .payBack(afterSeconds: 120))
        try bench.quarters(1...2)
        let moved = try #require(try bench.ledger.creditAccounts(source: "serial").first).movedSeq
        let ledger = bench.ledger
        bench.payoutAnswer = { request in
            let order = PayoutOrder(requestID: request.requestID, amountMinor: request.amountMinor, currency: "USD", by: request.by, creditAccount: request.creditAccount)
            if (try? ledger.payout(requestID: order.requestID)) == nil {
                _ = try? ledger.append([.payoutRequested(order, source: "serial", plan: "2×USD25", device: nil)])
            }
            guard let record = try? ledger.payout(requestID: order.requestID) else { return .unavailable("not journalled") }
            return .payout(record, coins: [:], repeated: false)
        }
        bench.tick(at: 0)
        bench.tick(at: 60)
        #expect(bench.payouts.isEmpty)
        bench.tick(at: 121)
        #expect(bench.payouts.map(\.requestID) == ["standing-\(moved)"] && bench.payouts.first?.amountMinor == 50 && bench.balance == 0)
        #expect(bench.replies.isEmpty, "nobody asked: nobody is answered")

        var none = try Bench("credit-standing-nopay", paysOut: false, standing: .payBack(afterSeconds: 120))
        try none.quarters(1...1)
        none.tick(at: 0)
        none.tick(at: 1000)
        #expect(none.payouts.isEmpty && none.balance == 25, "no device pays change: the credit stays")
    }
}
