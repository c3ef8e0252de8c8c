import CoinMechLedger
import CoinMechModel

/// What the soak's kiosk asked of the customer's credit, and that record joined with the ledger
/// and coinsim's truth at the end: each sale moved once (a kill between the request and its
/// reply included), each refund once, nothing refused that the credit covered, nothing moved
/// that the kiosk did not ask for, and the balance the ledger ends with is the value of the
/// coins the mech stored less the sales, plus the refunds.
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

    /// The problems found: the kiosk's own, then those of its record against the ledger.
    /// `storedValueMinor` is the value of the coins the mech stored, from its truth.
    func audit(ledger: Ledger, source: String, currency: String, storedValueMinor: Int64, events: [LedgerEvent]) throws -> [String] {
        var problems = problems
        var spent: Int64 = 0, refunded: Int64 = 0, moves = 0
        for sale in sales {
            let found = try ledger.creditMoves(requestID: sale.id)
            let spends = found.filter { $0.move.kind == .spent }, refunds = found.filter { $0.move.kind == .refunded }
            moves += found.count
            spent += spends.reduce(0) { $0 + $1.move.amountMinor }
            refunded += refunds.reduce(0) { $0 + $1.move.amountMinor }
            let fine = switch sale.approved {
            case true?: spends.count == 1 && spends[0].move.amountMinor == sale.amountMinor && refunds.count == (sale.refunded ? 1 : 0)
            case false?: found.isEmpty
            // No answer: the daemon may or may not have moved it, once; the balance says which.
            case nil: spends.count <= 1 && refunds.isEmpty && spends.allSatisfy { $0.move.amountMinor == sale.amountMinor }
            }
            if !fine {
                problems.append("sale \(sale.id) (\(sale.amountMinor), answered \(sale.approved.map { $0 ? "approved" : "refused" } ?? "nothing")"
                    + "\(sale.refunded ? ", refunded" : "")) has \(spends.count) spends and \(refunds.count) refunds on the ledger")
            }
        }
        let ledgerMoves = events.count { $0.kind == EventKind.creditSpent.rawValue || $0.kind == EventKind.creditRefunded.rawValue }
        if ledgerMoves != moves {
            problems.append("the ledger has \(ledgerMoves) credit moves, the kiosk's sales account for \(moves)")
        }
        let balance = try ledger.creditAccounts(source: source).filter { $0.currency == currency }.reduce(0) { $0 + $1.balanceMinor }
        let expected = storedValueMinor - spent + refunded
        if balance != expected {
            problems.append("the credit ends at \(balance), not \(expected): the coins stored \(storedValueMinor), less \(spent) sold, plus \(refunded) refunded")
        }
        return problems
    }
}
