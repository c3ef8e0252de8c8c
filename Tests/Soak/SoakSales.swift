import CoinMechAudit
import CoinMechLedger
import CoinMechModel

/// What the soak's kiosk asked of the customer's credit, judged at the end by `CreditAudit`
/// (the crash suite's judge of a sale application: each sale moved once, each refund once,
/// nothing refused moved, no move the kiosk did not ask for, the balance the events' replay and
/// money conserved), and the coins that raised the credit held to those coinsim stored.
struct SoakSales: Sendable {
    struct Sale: Sendable {
        var id: String
        var amountMinor: Int64
        /// The daemon's answer: approved or refused; nil when none came before the soak stopped.
        var approved: Bool?
        var refunded = false
    }

    var sales: [Sale] = []
    /// Sales asked for more than the balance on purpose, and refused as they must be.
    var refusedShort = 0
    /// Answers a kiosk should never get (a refusal the credit covered, a `bad_request`).
    var problems: [String] = []

    var approved: Int { sales.count { $0.approved == true } }
    var refunds: Int { sales.count(where: \.refunded) }

    /// The kiosk's record as `CreditAudit` reads an application's journal.
    var answers: [CreditAudit.Answer] {
        sales.flatMap { sale in
            let spend = CreditAudit.Answer(requestID: sale.id, kind: .spend, state: sale.approved.map { $0 ? "approved" : "refused" } ?? "unanswered",
                                           amountMinor: sale.amountMinor)
            return sale.refunded ? [spend, CreditAudit.Answer(requestID: sale.id, kind: .refund, state: "refunded")] : [spend]
        }
    }

    /// The problems found: the kiosk's own, then those of its record against the ledger.
    /// `storedValueMinor` is the value of the coins the mech stored, from its truth.
    func audit(ledger: Ledger, source: String, currency: String, storedValueMinor: Int64, events: [LedgerEvent]) throws -> [String] {
        let balance = try ledger.creditAccounts(source: source).filter { $0.currency == currency }.reduce(0) { $0 + $1.balanceMinor }
        // The soak's mech pays no change: no payouts.
        let credit = CreditAudit(source: source, currency: currency, events: events, payouts: [], balanceMinor: balance, answers: answers)
        var problems = problems + credit.problems
        if !credit.moneyConserved {
            problems.append("money not conserved: coins in \(credit.coinsInMinor), sold \(credit.salesMinor), refunded \(credit.refundedMinor), standing \(credit.standingMinor)")
        }
        if credit.coinsInMinor != storedValueMinor {
            problems.append("the ledger's coins raised \(credit.coinsInMinor) of credit, the mech stored \(storedValueMinor)")
        }
        return problems
    }
}
