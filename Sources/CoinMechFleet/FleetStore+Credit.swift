import Foundation
import Logging
import PostgresNIO

/// The customer's credit as the fleet keeps it (docs/FLEET.md, "The customer's credit"): every
/// figure comes from stored events (the first copy of each, F4). `credit_tallies` and
/// `credit_balances` (step 5) are kept in the transaction that stores the events, for
/// `/metrics`; a cabinet's page reads its own events.
extension FleetStore {
    /// The events that move a customer's credit and are counted: sales, refunds, escrow returns
    /// and expiries. `credit_opened` moves nothing but starts a balance.
    public static let creditMoveKinds = ["credit_spent", "credit_refunded", "credit_returned", "credit_expired"]
    static let creditKinds = ["credit_opened"] + creditMoveKinds

    /// One currency's credit in a cabinet: the moves of each kind (count and minor units) and
    /// the last known balance (nil: no credit event of it stored yet).
    public struct CreditFigures: Sendable, Equatable {
        public var cabinet: String
        public var currency: String
        public var balanceMinor: Int64?
        /// By kind (`credit_spent` …): moves and their value.
        public var moves: [String: (count: Int64, minor: Int64)]

        public init(cabinet: String, currency: String, balanceMinor: Int64?, moves: [String: (count: Int64, minor: Int64)]) {
            self.cabinet = cabinet
            self.currency = currency
            self.balanceMinor = balanceMinor
            self.moves = moves
        }

        public static func == (a: CreditFigures, b: CreditFigures) -> Bool {
            a.cabinet == b.cabinet && a.currency == b.currency && a.balanceMinor == b.balanceMinor && a.moves.count == b.moves.count
                && a.moves.allSatisfy { b.moves[$0.key]?.count == $0.value.count && b.moves[$0.key]?.minor == $0.value.minor }
        }
    }

    /// The latest credit event per account and currency among `events` rows matching `filter`,
    /// with the balance it left (a detail that is no whole number reads 0).
    static func latestCredit(where filter: String) -> String {
        """
        SELECT DISTINCT ON (cabinet, account, currency) cabinet, account, currency, seq, balance
        FROM (SELECT e.cabinet, coalesce(e.event->'detail'->>'account', e.event->>'source', '?') AS account, coalesce(e.currency, '?') AS currency, e.seq,
                     \(wholeNumber("e.event->'detail'->>'balance_minor'")) AS balance
              FROM events e WHERE e.kind IN (\(creditKinds.map { "'\($0)'" }.joined(separator: ", "))) AND \(filter)) m
        ORDER BY cabinet, account, currency, seq DESC
        """
    }

    /// The coins of account `l.account` (its source) in `l.currency` stored after seq `l.seq`.
    static func coinsAfter(_ l: String) -> String {
        """
        coalesce((SELECT sum(c.value_minor) FROM events c WHERE c.cabinet = \(l).cabinet AND c.kind = 'coin' AND c.seq > \(l).seq
                  AND c.currency = \(l).currency AND c.event->>'source' = \(l).account), 0)
        """
    }

    /// In the batch's transaction, after its events are stored: the credit tallies and balances
    /// moved by the events it stored (`cabinets`, `seqs`: the first copies only).
    static func keepCredit(_ connection: PostgresConnection, cabinets: [String], seqs: [Int64], kinds: Set<String>, logger: Logger) async throws {
        let moves = kinds.contains { creditKinds.contains($0) }
        guard moves || kinds.contains("coin") else { return }
        if moves {
            try await connection.query("""
                INSERT INTO credit_tallies (cabinet, kind, currency, moves, value_minor)
                SELECT e.cabinet, e.kind, coalesce(e.currency, '?'), count(*), coalesce(sum(e.value_minor), 0)
                FROM events e JOIN unnest(\(cabinets)::text[], \(seqs)::bigint[]) AS n(cabinet, seq) ON e.cabinet = n.cabinet AND e.seq = n.seq
                WHERE e.kind IN ('credit_spent', 'credit_refunded', 'credit_returned', 'credit_expired')
                GROUP BY 1, 2, 3
                ON CONFLICT (cabinet, kind, currency) DO UPDATE SET moves = credit_tallies.moves + excluded.moves,
                                                                     value_minor = credit_tallies.value_minor + excluded.value_minor
                """, logger: logger)
        }
        if kinds.contains("coin") {
            // Coins after an account's latest credit event raise its balance; those before it are
            // in that event's balance already (they arrived late). Only the coins of cabinets
            // that keep an account are looked at: asked first, as the planner cannot know that
            // the accounts of a batch's cabinets are often none, and would join every coin first.
            var keeping: Set<String> = []
            for try await cabinet in try await connection.query("""
                SELECT DISTINCT cabinet FROM credit_balances WHERE cabinet = ANY(\(Array(Set(cabinets)))::text[])
                """, logger: logger).decode(String.self) {
                keeping.insert(cabinet)
            }
            let coins = zip(cabinets, seqs).filter { keeping.contains($0.0) }
            if !coins.isEmpty {
                try await connection.query("""
                    UPDATE credit_balances b SET coins_minor = b.coins_minor + c.value
                    FROM (SELECT x.cabinet, x.account, x.currency, sum(e.value_minor) AS value
                          FROM unnest(\(coins.map(\.0))::text[], \(coins.map(\.1))::bigint[]) AS n(cabinet, seq)
                          JOIN events e ON e.cabinet = n.cabinet AND e.seq = n.seq AND e.kind = 'coin'
                          JOIN credit_balances x ON x.cabinet = e.cabinet AND x.currency = e.currency AND x.account = e.event->>'source' AND e.seq > x.seq
                          GROUP BY 1, 2, 3) c
                    WHERE b.cabinet = c.cabinet AND b.account = c.account AND b.currency = c.currency
                    """, logger: logger)
            }
        }
        if moves {
            // A later credit event stored: its balance, and the coins stored after it, summed again.
            let latest = latestCredit(where: "(e.cabinet, e.seq) IN (SELECT * FROM unnest($1::text[], $2::bigint[]))")
            var query = PostgresQuery(unsafeSQL: """
                INSERT INTO credit_balances (cabinet, account, currency, seq, balance_minor, coins_minor)
                SELECT l.cabinet, l.account, l.currency, l.seq, l.balance, \(coinsAfter("l")) FROM (\(latest)) l
                ON CONFLICT (cabinet, account, currency) DO UPDATE SET seq = excluded.seq, balance_minor = excluded.balance_minor, coins_minor = excluded.coins_minor
                WHERE credit_balances.seq < excluded.seq
                """)
            query.binds.append(cabinets)
            query.binds.append(seqs)
            try await connection.query(query, logger: logger)
        }
    }

    /// Every cabinet's credit for `/metrics`: the kept tallies and balances, a row per figure.
    public func creditFigures() async throws -> [CreditFigures] {
        try await database.call("credit figures") { client in
            var out: [String: CreditFigures] = [:]
            func key(_ cabinet: String, _ currency: String) -> String { "\(cabinet)\u{0}\(currency)" }
            for try await (cabinet, currency, balance) in try await client.query("""
                SELECT cabinet, currency, \(unescaped: Self.bigint("sum(balance_minor + coins_minor)")) FROM credit_balances GROUP BY 1, 2
                """, logger: logger).decode((String, String, Int64).self) {
                out[key(cabinet, currency)] = CreditFigures(cabinet: cabinet, currency: currency, balanceMinor: balance, moves: [:])
            }
            for try await (cabinet, kind, currency, moves, value) in try await client.query("""
                SELECT cabinet, kind, currency, moves, \(unescaped: Self.bigint("value_minor")) FROM credit_tallies
                """, logger: logger).decode((String, String, String, Int64, Int64).self) {
                out[key(cabinet, currency), default: CreditFigures(cabinet: cabinet, currency: currency, balanceMinor: nil, moves: [:])].moves[kind] = (moves, value)
            }
            return out.values.sorted { ($0.cabinet, $0.currency) < ($1.cabinet, $1.currency) }
        }
    }

    /// One cabinet's credit read from its stored events, for its page: per currency, the moves
    /// of each kind and the last known balance (its latest credit event's, plus the coins after).
    public func creditFromEvents(_ cabinet: String) async throws -> [CreditFigures] {
        try await database.call("a cabinet's credit") { client in
            var out: [String: CreditFigures] = [:]
            for try await (currency, kind, moves, value) in try await client.query("""
                SELECT coalesce(currency, '?'), kind, count(*), \(unescaped: Self.bigint("sum(value_minor)")) FROM events
                WHERE cabinet = \(cabinet) AND kind IN ('credit_spent', 'credit_refunded', 'credit_returned', 'credit_expired') GROUP BY 1, 2
                """, logger: logger).decode((String, String, Int64, Int64).self) {
                out[currency, default: CreditFigures(cabinet: cabinet, currency: currency, balanceMinor: nil, moves: [:])].moves[kind] = (moves, value)
            }
            var query = PostgresQuery(unsafeSQL: """
                SELECT t.currency, \(Self.bigint("sum(t.total)")) FROM (
                    SELECT l.currency, l.balance + \(Self.coinsAfter("l")) AS total FROM (\(Self.latestCredit(where: "e.cabinet = $1"))) l) t
                GROUP BY 1
                """)
            query.binds.append(cabinet)
            for try await (currency, balance) in try await client.query(query, logger: logger).decode((String, Int64).self) {
                out[currency, default: CreditFigures(cabinet: cabinet, currency: currency, balanceMinor: nil, moves: [:])].balanceMinor = balance
            }
            return out.values.sorted { $0.currency < $1.currency }
        }
    }
}
