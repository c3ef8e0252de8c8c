import CoinMechAudit
import CoinMechModel
import Testing

/// The crash suite's judge of the customer's credit, on ledgers written by hand with their
/// figures worked by hand: one clean, and one of each way money goes wrong.
@Suite("Credit audit: conservation, sales beyond the credit, twice, lost and phantom, from the events alone")
struct CreditAuditTests {
    /// A builder of the ledger's events in seq order.
    struct Book {
        var events: [LedgerEvent] = []

        mutating func add(_ kind: EventKind, _ value: Int64, id: String? = nil, balance: Int64? = nil) {
            var detail: [String] = []
            if let id { detail.append("\"request_id\":\"\(id)\"") }
            if let balance { detail.append("\"balance_minor\":\"\(balance)\"") }
            events.append(LedgerEvent(seq: Int64(events.count + 1), time: 0, kind: kind.rawValue, source: "mdb", currency: "USD", valueMinor: value,
                                      detail: detail.isEmpty ? nil : "{\(detail.joined(separator: ","))}"))
        }
    }

    static func returned(_ id: String, amount: Int64, paid: Int64, debt: Int64) -> PayoutRecord {
        PayoutRecord(order: PayoutOrder(requestID: id, amountMinor: amount, currency: "USD", by: "kiosk", creditAccount: "mdb"), source: "mdb",
                     requestedSeq: 1, settledSeq: 2, steps: [],
                     settlement: PayoutSettlement(outcome: debt == 0 ? .done : .partial, paidMinor: paid, debtMinor: debt, paidCoins: [:], reason: nil, afterRestart: false))
    }

    /// A quarter before the account (not credit), two after, a sale of 30 put back, another of
    /// 15, and the 35 left paid back: 30 paid, 5 owed. 50 in = 15 sold + 30 paid + 5 owed + 0.
    static func clean() -> Book {
        var book = Book()
        book.add(.coin, 25)
        book.add(.creditOpened, 0, balance: 0)
        book.add(.coin, 25)
        book.add(.coin, 25)
        book.add(.creditSpent, 30, id: "s1", balance: 20)
        book.add(.creditRefunded, 30, id: "s1", balance: 50)
        book.add(.creditSpent, 15, id: "s2", balance: 35)
        book.add(.creditReturned, 35, id: "r1", balance: 0)
        return book
    }

    static let answers = [
        CreditAudit.Answer(requestID: "s1", kind: .spend, state: "approved", amountMinor: 30, seq: 5),
        CreditAudit.Answer(requestID: "s1", kind: .refund, state: "refunded", amountMinor: 30, seq: 6),
        CreditAudit.Answer(requestID: "s2", kind: .spend, state: "approved", amountMinor: 15, seq: 7),
        CreditAudit.Answer(requestID: "r1", kind: .cancel, state: "returned"),
    ]

    @Test("a clean ledger: every figure as worked by hand, money conserved")
    func cleanLedger() {
        let audit = CreditAudit(source: "mdb", currency: "USD", events: Self.clean().events, payouts: [Self.returned("r1", amount: 35, paid: 30, debt: 5)],
                                balanceMinor: 0, answers: Self.answers)
        #expect(audit.coinsInMinor == 50 && audit.sales == 2 && audit.salesMinor == 45 && audit.refundedMinor == 30)
        #expect(audit.changePaidMinor == 30 && audit.owedMinor == 5 && audit.standingMinor == 0)
        #expect(audit.moneyConserved && audit.isClean, "\(audit.problems)")
    }

    @Test("a sale beyond the credit is found, and the balance it claims")
    func beyondTheCredit() {
        var book = Book()
        book.add(.creditOpened, 0, balance: 0)
        book.add(.coin, 25)
        book.add(.creditSpent, 35, id: "s1", balance: -10)
        let audit = CreditAudit(source: "mdb", currency: "USD", events: book.events, payouts: [], balanceMinor: nil, answers: nil)
        #expect(audit.approvedBeyondCredit == 2, "\(audit.problems)")  // beyond the 25, and left at -10
        #expect(!audit.isClean)
    }

    @Test("two sales under one request id, and a sale told to the application with another amount")
    func spentTwice() {
        var book = Self.clean()
        book.add(.coin, 25)
        book.add(.creditSpent, 15, id: "s2", balance: 10)
        var answers = Self.answers
        answers[0].amountMinor = 40
        let audit = CreditAudit(source: "mdb", currency: "USD", events: book.events, payouts: [Self.returned("r1", amount: 35, paid: 30, debt: 5)],
                                balanceMinor: 10, answers: answers)
        #expect(audit.spentTwice == 2, "\(audit.problems)")
        #expect(audit.moneyConserved && !audit.isClean)
    }

    @Test("a sale the application was told of is missing; a move nobody asked is there")
    func lostAndPhantom() {
        var book = Self.clean()
        book.add(.coin, 25)
        book.add(.creditSpent, 5, id: "ghost", balance: 20)
        let answers = Self.answers + [CreditAudit.Answer(requestID: "s9", kind: .spend, state: "approved", amountMinor: 5, seq: 99)]
        let audit = CreditAudit(source: "mdb", currency: "USD", events: book.events, payouts: [Self.returned("r1", amount: 35, paid: 30, debt: 5)],
                                balanceMinor: 20, answers: answers)
        #expect(audit.lost == 1 && audit.phantom == 1, "\(audit.problems)")
    }

    @Test("a sale the application was told was refused, and a return told kept, that are on the ledger all the same")
    func refusedButMoved() {
        var answers = Self.answers
        answers[2].state = "refused"
        answers[3].state = "kept"
        let audit = CreditAudit(source: "mdb", currency: "USD", events: Self.clean().events, payouts: [Self.returned("r1", amount: 35, paid: 30, debt: 5)],
                                balanceMinor: 0, answers: answers)
        #expect(audit.refusedButMoved == 2 && !audit.isClean, "\(audit.problems)")
    }

    @Test("money not conserved: the account's column off the events, a return paid and owed more than it took, an event's balance wrong")
    func notConserved() {
        let paidTooMuch = CreditAudit(source: "mdb", currency: "USD", events: Self.clean().events, payouts: [Self.returned("r1", amount: 35, paid: 35, debt: 5)],
                                      balanceMinor: 0, answers: Self.answers)
        #expect(!paidTooMuch.moneyConserved)
        let column = CreditAudit(source: "mdb", currency: "USD", events: Self.clean().events, payouts: [Self.returned("r1", amount: 35, paid: 30, debt: 5)],
                                 balanceMinor: 5, answers: Self.answers)
        #expect(!column.moneyConserved && column.balanceMismatches == 1)
        var book = Self.clean()
        book.events[4].detail = "{\"request_id\":\"s1\",\"balance_minor\":\"21\"}"
        let detail = CreditAudit(source: "mdb", currency: "USD", events: book.events, payouts: [Self.returned("r1", amount: 35, paid: 30, debt: 5)],
                                 balanceMinor: 0, answers: Self.answers)
        #expect(!detail.moneyConserved && detail.balanceMismatches == 1)
    }
}
