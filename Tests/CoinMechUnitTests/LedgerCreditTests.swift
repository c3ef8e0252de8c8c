import CoinMechLedger
import CoinMechModel
import CoinSimCore
@testable import CoinMechTestSupport
import Foundation
import Testing

/// A customer's credit on a real ledger: coins raise it in their own transaction, sales,
/// refunds, expiry and change move it once per request id, and nothing takes it below 0.
/// Expected balances are summed by hand from the coins and moves each test makes.
@Suite("Ledger: a customer's credit, raised by coins, moved once per request id, never below 0")
struct LedgerCreditTests {
    static func ledger(_ name: String) throws -> Ledger {
        try Ledger(directory: TestSupport.temporaryDirectory(name))
    }

    static func open(_ ledger: Ledger) throws {
        try ledger.append([.creditOpened(source: "serial", account: "serial", currencies: ["USD"], by: "test")])
    }

    static func balance(_ ledger: Ledger) throws -> Int64? {
        try ledger.creditAccounts(source: "serial").first { $0.currency == "USD" }?.balanceMinor
    }

    /// A quarter the mech stored, credited at once.
    static func quarter(_ seq: UInt64) -> LedgerEntry {
        guard case .decision(let record, _) = LedgerFixtures.quarter(seq) else { preconditionFailure("a decision") }
        return .decision(record, credit: .atOnce)
    }

    static func sale(_ id: String, _ amount: Int64, item: String? = "B4") -> LedgerEntry {
        .credit(CreditMove(kind: .spent, requestID: id, source: "serial", account: "serial", currency: "USD", amountMinor: amount, item: item, by: "kiosk"))
    }

    static func refund(_ id: String, _ amount: Int64) -> LedgerEntry {
        .credit(CreditMove(kind: .refunded, requestID: id, source: "serial", account: "serial", currency: "USD", amountMinor: amount, by: "kiosk"))
    }

    @Test("coins raise the credit only once it is held, each in its own credit: at once, on the mech's word, late; never a coin returned")
    func coinsRaise() throws {
        let ledger = try Self.ledger("credit-coins")
        try ledger.append([Self.quarter(1)])
        #expect(try Self.balance(ledger) == nil, "no credit is held before the account is opened")
        try Self.open(ledger)
        #expect(try Self.balance(ledger) == 0)
        try ledger.append([Self.quarter(2)])
        #expect(try Self.balance(ledger) == 25)
        // Pending until the mech's word: credited raises it, returned does not.
        let pending = try ledger.append([LedgerFixtures.quarter(3), LedgerFixtures.quarter(4), LedgerFixtures.quarter(5)]).events.map(\.seq)
        #expect(try Self.balance(ledger) == 25)
        try ledger.append([.resolve(decisionSeq: pending[0], .credited), .resolve(decisionSeq: pending[1], .returned), .resolve(decisionSeq: pending[2], .unconfirmed)])
        #expect(try Self.balance(ledger) == 50)
        try ledger.append([.lateCredit(decisionSeq: pending[2], message: "the journal says stored")])
        try ledger.append([.lateCredit(decisionSeq: pending[2], message: "again")])
        #expect(try Self.balance(ledger) == 75, "a late credit raises it once")
        // Opened again: left as it is.
        try Self.open(ledger)
        #expect(try Self.balance(ledger) == 75)
        #expect(try ledger.events(since: 0).filter { $0.kind == EventKind.creditOpened.rawValue }.count == 1)
    }

    @Test("a sale is approved once per request id and never beyond the credit; a refused one records nothing")
    func sales() throws {
        let ledger = try Self.ledger("credit-sales")
        try Self.open(ledger)
        try ledger.append([Self.quarter(1), Self.quarter(2), Self.quarter(3)])
        let approved = try ledger.append([Self.sale("s1", 50)]).events
        #expect(approved.map(\.kind) == ["credit_spent"] && approved.first?.valueMinor == 50 && approved.first?.currency == "USD")
        #expect(try Self.balance(ledger) == 25)
        let last = try ledger.lastSeq()
        for refused in [Self.sale("s1", 25), Self.sale("s2", 50), Self.sale("s3", 0), Self.sale("s4", -5),
                        .credit(CreditMove(kind: .spent, requestID: "s5", source: "serial", account: "serial", currency: "EUR", amountMinor: 10, by: "kiosk"))] {
            #expect(throws: LedgerError.self, "\(refused)") { try ledger.append([refused]) }
        }
        #expect(try ledger.lastSeq() == last, "a refused move leaves no event and no gap")
        #expect(try Self.balance(ledger) == 25)
        let record = try #require(try ledger.creditMoves(requestID: "s1").first)
        #expect(record.move.amountMinor == 50 && record.move.item == "B4" && record.balanceAfterMinor == 25 && record.seq == approved.first?.seq)
    }

    @Test("a refund puts back a sale approved under its id, once, for its own amount; of no sale, nothing")
    func refunds() throws {
        let ledger = try Self.ledger("credit-refunds")
        try Self.open(ledger)
        try ledger.append([Self.quarter(1), Self.quarter(2)])
        try ledger.append([Self.sale("s1", 40)])
        #expect(throws: LedgerError.self) { try ledger.append([Self.refund("s1", 30)]) }
        #expect(throws: LedgerError.self) { try ledger.append([Self.refund("never", 40)]) }
        try ledger.append([Self.refund("s1", 40)])
        #expect(try Self.balance(ledger) == 50)
        #expect(throws: LedgerError.self) { try ledger.append([Self.refund("s1", 40)]) }
        #expect(try ledger.creditMoves(requestID: "s1").map(\.move.kind) == [.spent, .refunded])
    }

    @Test("credit left standing expires whole, and only as read: a coin in between makes the expiry stale")
    func expiry() throws {
        let ledger = try Self.ledger("credit-expiry")
        try Self.open(ledger)
        try ledger.append([Self.quarter(1)])
        let stale = CreditMove(kind: .expired, requestID: "expire:serial:1", source: "serial", account: "serial", currency: "USD", amountMinor: 25, by: "standing")
        try ledger.append([Self.quarter(2)])
        #expect(throws: LedgerError.self) { try ledger.append([.credit(stale)]) }
        var fresh = stale
        fresh.requestID = "expire:serial:2"
        fresh.amountMinor = 50
        try ledger.append([.credit(fresh)])
        #expect(try Self.balance(ledger) == 0)
    }

    @Test("credit paid back as change: taken off in the payout's first write, never beyond the credit, never under a sale's id")
    func returnedAsChange() throws {
        let ledger = try Self.ledger("credit-return")
        try Self.open(ledger)
        try ledger.append([Self.quarter(1), Self.quarter(2), Self.quarter(3)])
        try ledger.append([Self.sale("s1", 25)])
        let order = PayoutOrder(requestID: "c1", amountMinor: 50, currency: "USD", by: "kiosk", creditAccount: "serial")
        let events = try ledger.append([.payoutRequested(order, source: "serial", plan: "2×USD25", device: nil)]).events
        #expect(events.map(\.kind) == ["payout_requested", "credit_returned"])
        #expect(try Self.balance(ledger) == 0)
        #expect(try ledger.payout(requestID: "c1")?.order.creditAccount == "serial")
        let last = try ledger.lastSeq()
        for refused in [PayoutOrder(requestID: "c2", amountMinor: 5, currency: "USD", by: "kiosk", creditAccount: "serial"),
                        PayoutOrder(requestID: "s1", amountMinor: 5, currency: "USD", by: "kiosk", creditAccount: "serial")] {
            #expect(throws: LedgerError.self) { try ledger.append([.payoutRequested(refused, source: "serial", plan: "", device: nil)]) }
        }
        #expect(try ledger.payout(requestID: "c2") == nil && ledger.lastSeq() == last, "a refused return journals no payout")
        // A sale under a payout's id is refused too.
        try ledger.append([Self.quarter(4)])
        #expect(throws: LedgerError.self) { try ledger.append([Self.sale("c1", 25)]) }
    }

    @Test("200 random sessions: the balance is the coins in less sales, change and expiry, plus refunds, summed from the events alone", arguments: UInt64(1)...3)
    func conservation(seed: UInt64) throws {
        var random = SplitMix64(seed: seed)
        let ledger = try Self.ledger("credit-conservation-\(seed)")
        try Self.open(ledger)
        var sales: [(String, Int64)] = [], next = 0, coins: UInt64 = 0
        for _ in 0..<200 {
            next += 1
            let amount = Int64.random(in: 1...80, using: &random)
            let entry: LedgerEntry
            switch Int.random(in: 0..<10, using: &random) {
            case 0..<4:
                coins += 1
                entry = Self.quarter(coins)
            case 4..<7:
                entry = Self.sale("s\(next)", amount)
                sales.append(("s\(next)", amount))
            case 7:
                guard let (id, sold) = sales.randomElement(using: &random) else { continue }
                entry = Self.refund(id, sold)
            case 8:
                entry = .payoutRequested(PayoutOrder(requestID: "c\(next)", amountMinor: amount, currency: "USD", by: "kiosk", creditAccount: "serial"),
                                         source: "serial", plan: "", device: nil)
            default:
                let balance = try #require(try Self.balance(ledger))
                entry = .credit(CreditMove(kind: .expired, requestID: "e\(next)", source: "serial", account: "serial", currency: "USD",
                                           amountMinor: Bool.random(using: &random) ? balance : balance + 1, by: "standing"))
            }
            _ = try? ledger.append([entry])  // refused moves change nothing
        }
        let events = try ledger.events(since: 0, limit: 10_000)
        func sum(_ kind: String) -> Int64 { events.filter { $0.kind == kind }.reduce(0) { $0 + ($1.valueMinor ?? 0) } }
        let balance = sum("coin") - sum("credit_spent") + sum("credit_refunded") - sum("credit_returned") - sum("credit_expired")
        #expect(try Self.balance(ledger) == balance)
        #expect(balance >= 0)
        // Every move's balance after it is the running sum up to its event.
        var running: Int64 = 0
        for event in events {
            switch event.kind {
            case "coin": running += event.valueMinor ?? 0
            case "credit_refunded": running += event.valueMinor ?? 0
            case "credit_spent", "credit_returned", "credit_expired": running -= event.valueMinor ?? 0
            default: continue
            }
            if event.kind.hasPrefix("credit_") { #expect(event.detail?.contains("\"balance_minor\":\"\(running)\"") == true, "\(event)") }
            #expect(running >= 0)
        }
        #expect(sum("credit_spent") > 0 && sum("credit_refunded") > 0 && sum("credit_returned") > 0, "seed \(seed) reached every move")
    }
}
