import Foundation
import PostgresNIO

extension FleetStore {
    /// The fleet page: every cabinet with its cash box (credit since its last `collect`),
    /// today's credit (since `dayStart`) and open alerts; `only` one cabinet's line (its page
    /// reads no other cabinet's events).
    public func fleetPage(now: Double, dayStart: Double, only: String? = nil) async throws -> FleetViews.FleetPage {
        let alerts = try await alerts(openOnly: true, cabinet: only)
        let box = try await money("""
            SELECT e.cabinet, e.currency, \(unescaped: Self.bigint("sum(e.value_minor)")) FROM events e
            WHERE e.kind = 'coin' AND (\(only)::text IS NULL OR e.cabinet = \(only))
            AND e.seq > coalesce((SELECT max(x.seq) FROM events x WHERE x.cabinet = e.cabinet AND x.kind = 'collect'), 0)
            GROUP BY e.cabinet, e.currency
            """)
        let today = try await money("""
            SELECT cabinet, currency, \(unescaped: Self.bigint("sum(value_minor)")) FROM events
            WHERE kind = 'coin' AND time >= \(dayStart) AND (\(only)::text IS NULL OR cabinet = \(only)) GROUP BY cabinet, currency
            """)
        let lines = try await database.call("the fleet page") { client in
            var lines: [FleetViews.CabinetLine] = []
            for try await (cabinet, site, state, since, reason, contiguous) in try await client.query("""
                SELECT cabinet, site, state, state_since, state_reason, contiguous_seq FROM cabinets
                WHERE (\(only)::text IS NULL OR cabinet = \(only)) ORDER BY site, cabinet
                """, logger: logger).decode((String, String, String, Double?, String?, Int64).self) {
                lines.append(FleetViews.CabinetLine(cabinet: cabinet, site: site, state: state, stateSince: since, stateReason: reason, cashBox: box[cabinet] ?? [],
                                                    today: today[cabinet] ?? [], openAlerts: alerts.filter { $0.cabinet == cabinet }.map(\.kind), storedSeq: contiguous))
            }
            return lines
        }
        return FleetViews.FleetPage(now: now, cabinets: lines, openAlerts: alerts)
    }

    /// One cabinet's page; nil if the fleet has never heard of it.
    public func cabinetPage(_ cabinet: String, now: Double, dayStart: Double) async throws -> FleetViews.CabinetPage? {
        guard let line = try await fleetPage(now: now, dayStart: dayStart, only: cabinet).cabinets.first else { return nil }
        let (recent, collections, hourly, commands) = try await database.call("a cabinet's page") { client in
            var recent: [FleetViews.EventLine] = []
            for try await (seq, time, kind, json) in try await client.query("""
                SELECT seq, time, kind, event::text FROM events WHERE cabinet = \(cabinet) ORDER BY seq DESC LIMIT 50
                """, logger: logger).decode((Int64, Double, String, String).self) {
                recent.append(FleetViews.EventLine(seq: seq, time: time, kind: kind, summary: EventSummary.text(json)))
            }
            var collections: [FleetViews.Collection] = []
            for try await (id, time, by, currency, counted, ledger, difference, ledgerSeq) in try await client.query("""
                SELECT id, time, by, currency, counted_minor, ledger_minor, difference_minor, ledger_seq FROM collections WHERE cabinet = \(cabinet) ORDER BY id DESC LIMIT 50
                """, logger: logger).decode((Int64, Double, String, String, Int64, Int64, Int64, Int64?).self) {
                collections.append(FleetViews.Collection(id: id, time: time, by: by, counted: .init(currency: currency, minor: counted),
                                                         ledger: .init(currency: currency, minor: ledger), difference: difference, ledgerSeq: ledgerSeq))
            }
            var hourly: [FleetViews.HourlyCredit] = []
            for try await (hour, currency, value) in try await client.query("""
                SELECT floor(time / 3600) * 3600, coalesce(currency, '?'), \(unescaped: Self.bigint("sum(value_minor)")) FROM events
                WHERE cabinet = \(cabinet) AND kind = 'coin' AND time >= \(now - 7 * 86400) GROUP BY 1, 2 ORDER BY 1, 2
                """, logger: logger).decode((Double, String, Int64).self) {
                hourly.append(FleetViews.HourlyCredit(hour: hour, money: .init(currency: currency, minor: value)))
            }
            var commands: [FleetViews.CommandLine] = []
            for try await (id, name, args, by, sent, outcome) in try await client.query("""
                SELECT id, name, args::text, by, sent, outcome FROM commands WHERE cabinet = \(cabinet) ORDER BY sent DESC LIMIT 20
                """, logger: logger).decode((String, String, String, String, Double, String?).self) {
                commands.append(FleetViews.CommandLine(id: id, name: name, args: args, by: by, sent: sent, outcome: outcome))
            }
            return (recent, collections, hourly, commands)
        }
        let openAlerts = try await alerts(openOnly: false, cabinet: cabinet)
        var page = FleetViews.CabinetPage(now: now, line: line, recentEvents: recent, counters: try await counters(cabinet), collections: collections,
                                          alerts: openAlerts, hourly: hourly, commands: commands, pendingCollect: try await pendingCollect(cabinet))
        page.credit = try await creditFromEvents(cabinet)
        return page
    }

    /// EVA-DTS-style counters, since the cabinet's last `collect` and lifetime.
    public func counters(_ cabinet: String) async throws -> [FleetViews.Counter] {
        return try await database.call("counters") { client in
            let names = ["credited", "credited_value", "returned", "unconfirmed", "rejects", "power_ups", "starts", "acceptor_lost_events", "jams"]
            let rows = try await client.query("""
                WITH last AS (SELECT coalesce(max(seq), 0) AS seq FROM events WHERE cabinet = \(cabinet) AND kind = 'collect'),
                     c AS (SELECT e.*, e.seq > (SELECT seq FROM last) AS recent FROM events e WHERE e.cabinet = \(cabinet))
                SELECT recent,
                    count(*) FILTER (WHERE kind = 'coin'),
                    \(unescaped: Self.bigint("sum(value_minor) FILTER (WHERE kind = 'coin')")),
                    count(*) FILTER (WHERE kind = 'coin_returned'),
                    count(*) FILTER (WHERE kind = 'coin_unconfirmed'),
                    count(*) FILTER (WHERE kind = 'decision' AND verdict = 'reject'),
                    count(*) FILTER (WHERE kind = 'mech_power_up'),
                    count(*) FILTER (WHERE kind = 'startup'),
                    \(unescaped: Self.bigint("sum(\(Self.wholeNumber("event->'detail'->>'count'"))) FILTER (WHERE kind = 'cctalk_lost')")),
                    count(*) FILTER (WHERE kind = 'mech_status' AND upper(event->'detail'->>'status') = 'JAM')
                FROM c GROUP BY recent
                """, logger: logger)
            var since = Array(repeating: Int64(0), count: names.count), older = since
            for try await row in rows.decode((Bool, Int64, Int64, Int64, Int64, Int64, Int64, Int64, Int64, Int64).self) {
                let values = [row.1, row.2, row.3, row.4, row.5, row.6, row.7, row.8, row.9]
                if row.0 { since = values } else { older = values }
            }
            // Saturating: two sums near the bound (rows from elsewhere) must not trap the process.
            return names.indices.map { i in
                let (lifetime, overflow) = since[i].addingReportingOverflow(older[i])
                return FleetViews.Counter(name: names[i], sinceCollection: since[i], lifetime: overflow ? .max : lifetime)
            }
        }
    }

    /// The cabinet's latest `collect` event not yet matched by a recorded collection, with its
    /// collected value per currency.
    public func pendingCollect(_ cabinet: String) async throws -> (seq: Int64, money: [FleetViews.Money])? {
        return try await database.call("pendingCollect") { client in
            var found: (seq: Int64, money: [FleetViews.Money])?
            for try await (seq, currency, value) in try await client.query("""
                WITH last AS (SELECT seq, event FROM events WHERE cabinet = \(cabinet) AND kind = 'collect'
                              AND seq > coalesce((SELECT max(ledger_seq) FROM collections WHERE cabinet = \(cabinet)), 0) ORDER BY seq DESC LIMIT 1)
                SELECT last.seq, r->>'currency', \(unescaped: Self.bigint("sum(\(Self.wholeNumber("r->>'value_minor'")))"))
                FROM last LEFT JOIN LATERAL jsonb_array_elements(CASE WHEN jsonb_typeof(last.event->'collected') = 'array' THEN last.event->'collected' ELSE '[]'::jsonb END) r ON true
                GROUP BY last.seq, 2
                """, logger: logger).decode((Int64, String?, Int64).self) {
                var entry = found ?? (seq, [])
                if let currency { entry.money.append(.init(currency: currency, minor: value)) }
                found = entry
            }
            return found.map { ($0.seq, $0.money.sorted { $0.currency < $1.currency }) }
        }
    }

    /// An operator's count of a collection, beside the ledger's figure: the cabinet's latest
    /// unmatched `collect` event, or, if it has none, its cash box now.
    public func recordCollection(cabinet: String, by: String, currency: String, countedMinor: Int64, now: Double) async throws -> FleetViews.Collection {
        let pending = try await pendingCollect(cabinet)
        let ledgerMinor: Int64
        if let pending {
            ledgerMinor = pending.money.first { $0.currency == currency }?.minor ?? 0
        } else {
            ledgerMinor = try await database.call("a cash box") { client in
                var box: Int64 = 0
                for try await value in try await client.query("""
                    SELECT \(unescaped: Self.bigint("sum(value_minor)")) FROM events WHERE cabinet = \(cabinet) AND kind = 'coin' AND currency = \(currency)
                    AND seq > coalesce((SELECT max(seq) FROM events WHERE cabinet = \(cabinet) AND kind = 'collect'), 0)
                    """, logger: logger).decode(Int64.self) { box = value }
                return box
            }
        }
        // counted − ledger is kept in a bigint: the ledger's figure held to the sums a cabinet can reach.
        let ledgerFigure = min(max(ledgerMinor, 0), FleetLimits.maxSumMinor)
        let id = try await database.call("a collection") { client in
            var id: Int64 = 0
            for try await made in try await client.query("""
                INSERT INTO collections (cabinet, time, by, currency, counted_minor, ledger_minor, ledger_seq)
                VALUES (\(cabinet), \(now), \(by), \(currency), \(countedMinor), \(ledgerFigure), \(pending?.seq)) RETURNING id
                """, logger: logger).decode(Int64.self) { id = made }
            return id
        }
        return FleetViews.Collection(id: id, time: now, by: by, counted: .init(currency: currency, minor: countedMinor),
                                     ledger: .init(currency: currency, minor: ledgerFigure), difference: countedMinor - ledgerFigure, ledgerSeq: pending?.seq)
    }

    public func alerts(openOnly: Bool, cabinet: String?) async throws -> [FleetViews.Alert] {
        return try await database.call("alerts") { client in
            var out: [FleetViews.Alert] = []
            for try await (id, cab, kind, detail, opened, closed, acked) in try await client.query("""
                SELECT id, cabinet, kind, detail, opened, closed, acked_by FROM alerts
                WHERE (\(openOnly) = false OR closed IS NULL) AND (\(cabinet)::text IS NULL OR cabinet = \(cabinet))
                ORDER BY closed IS NOT NULL, opened DESC LIMIT \(openOnly ? 1_000_000 : 200)
                """, logger: logger).decode((Int64, String, String, String, Double, Double?, String?).self) {
                out.append(FleetViews.Alert(id: id, cabinet: cab, kind: kind, detail: detail, opened: opened, closed: closed, ackedBy: acked))
            }
            return out
        }
    }

    /// Cabinets by their bridge's state, and open alerts by kind: what `/metrics` shows at
    /// every scrape, counted by the database rather than read row by row.
    public func tallies() async throws -> (cabinets: [String: Int], openAlerts: [String: Int]) {
        return try await database.call("tallies") { client in
            var cabinets: [String: Int] = [:], alerts: [String: Int] = [:]
            for try await (state, count) in try await client.query("SELECT state, count(*) FROM cabinets GROUP BY state", logger: logger)
                .decode((String, Int64).self) { cabinets[state] = Int(count) }
            for try await (kind, count) in try await client.query("SELECT kind, count(*) FROM alerts WHERE closed IS NULL GROUP BY kind", logger: logger)
                .decode((String, Int64).self) { alerts[kind] = Int(count) }
            return (cabinets, alerts)
        }
    }

    public func site(of cabinet: String) async throws -> String? {
        return try await database.call("site") { client in
            var found: String?
            for try await site in try await client.query("SELECT site FROM cabinets WHERE cabinet = \(cabinet)", logger: logger).decode(String.self) { found = site }
            return found
        }
    }

    // MARK: Operators

    public func setOperator(name: String, passwordHash: String, role: String) async throws {
        try await database.call("setOperator") { client in
            _ = try await client.query("""
                INSERT INTO operators (name, password_hash, role) VALUES (\(name), \(passwordHash), \(role))
                ON CONFLICT (name) DO UPDATE SET password_hash = excluded.password_hash, role = excluded.role
                """, logger: logger)
        }
    }

    public func operatorLogin(name: String) async throws -> (hash: String, role: String)? {
        return try await database.call("operatorLogin") { client in
            var found: (String, String)?
            for try await row in try await client.query("SELECT password_hash, role FROM operators WHERE name = \(name)", logger: logger).decode((String, String).self) {
                found = row
            }
            return found
        }
    }

    /// A sum (PostgreSQL's `numeric`, never an overflow) as a `bigint` for the pages: 0 when there
    /// is nothing to sum, the bigint's bound when a sum passes it. The fleet refuses coins worth
    /// more than `FleetLimits.maxCoinMinor`, so only rows from elsewhere (an older fleet, a hand)
    /// can come near it; a page must still answer for them.
    static func bigint(_ numeric: String) -> String {
        "least(greatest(coalesce(\(numeric), 0), -9223372036854775808), 9223372036854775807)::bigint"
    }

    /// A JSON text field as a whole number for a sum: its digits (at most 15: below 2^53), 0 for
    /// anything else, so a row no cabinet should have sent cannot make a page fail.
    static func wholeNumber(_ text: String) -> String {
        "CASE WHEN \(text) ~ '^[0-9]{1,15}$' THEN (\(text))::bigint ELSE 0 END"
    }

    /// An operator's role now (`operator` or `admin`), nil if there is no such operator: read for
    /// each dashboard request, so a change of role or a removal takes effect at once.
    public func operatorRole(name: String) async throws -> String? {
        try await database.call("operatorRole") { client in
            var found: String?
            for try await role in try await client.query("SELECT role FROM operators WHERE name = \(name)", logger: logger).decode(String.self) { found = role }
            return found
        }
    }

    /// The kind of an open alert, nil if there is none open with that id.
    public func openAlertKind(id: Int64) async throws -> String? {
        try await database.call("openAlertKind") { client in
            var found: String?
            for try await kind in try await client.query("SELECT kind FROM alerts WHERE id = \(id) AND closed IS NULL", logger: logger).decode(String.self) { found = kind }
            return found
        }
    }

    /// Money per cabinet and currency from rows (cabinet, currency, minor).
    private func money(_ query: PostgresQuery) async throws -> [String: [FleetViews.Money]] {
        return try await database.call("money") { client in
            var out: [String: [FleetViews.Money]] = [:]
            for try await (cabinet, currency, minor) in try await client.query(query, logger: logger).decode((String, String?, Int64).self) {
                out[cabinet, default: []].append(.init(currency: currency ?? "?", minor: minor))
            }
            return out.mapValues { $0.sorted { $0.currency < $1.currency } }
        }
    }
}
