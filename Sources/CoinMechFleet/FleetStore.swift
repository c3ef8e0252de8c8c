import Foundation
import Logging
import PostgresNIO

/// The fleet's database: PostgreSQL through postgres-nio. Every write that moves a cabinet's
/// contiguous seq does so in the transaction that stores what moved it (or after both that did,
/// `raiseContiguous`), so the acks the fleet sends (after the commit) never run ahead of what
/// is stored.
public struct FleetStore: Sendable {
    /// The pool, every call within `database.timeout_s` (`FleetDatabase`).
    public let database: FleetDatabase
    let logger: Logger

    public init(_ database: FleetConfiguration.Database, logger: Logger) throws(FleetError) {
        var password: String?
        if let file = database.passwordFile {
            guard let text = try? String(contentsOfFile: file, encoding: .utf8) else { throw .database("cannot read database.password_file \(file)") }
            password = text.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        var configuration: PostgresClient.Configuration
        if let directory = database.socketDirectory {
            configuration = .init(unixSocketPath: "\(directory)/.s.PGSQL.\(database.port)", username: database.user, password: password, database: database.name)
        } else {
            configuration = .init(host: database.host ?? "localhost", port: database.port, username: database.user, password: password, database: database.name,
                                  tls: .prefer(.makeClientConfiguration()))
        }
        configuration.options.maximumConnections = 8
        self.database = FleetDatabase(configuration: configuration, deadline: database.timeoutSeconds, logger: logger)
        self.logger = logger
    }

    /// The database refused a write for what it holds (SQLSTATE classes 22, data; 23, integrity;
    /// 42, the statement), not for its availability: trying it again cannot succeed.
    public struct Refused: Error, CustomStringConvertible {
        public var description: String

        public init?(_ error: any Error) {
            if let refused = error as? Refused {
                self = refused
                return
            }
            guard let psql = error as? PSQLError, let state = psql.serverInfo?[.sqlState], ["22", "23", "42"].contains(String(state.prefix(2))) else { return nil }
            description = "SQLSTATE \(state): \(psql.serverInfo?[.message] ?? "")"
        }
    }

    // MARK: Schema

    /// Applies the steps not yet applied, under an advisory lock so two instances starting
    /// together do not race.
    public func migrate() async throws -> [Int] {
        try await database.call("the schema") { client in
            _ = try await client.query("CREATE TABLE IF NOT EXISTS schema_migrations (version int PRIMARY KEY, name text NOT NULL, applied double precision NOT NULL)", logger: logger)
        }
        var applied: [Int] = []
        for step in FleetMigrations.steps {
            let did = try await database.call("schema step \(step.version)") { client in try await client.withTransaction(logger: logger) { connection -> Bool in
                try await connection.query("SELECT pg_advisory_xact_lock(7215001)", logger: logger)
                let rows = try await connection.query("SELECT count(*) FROM schema_migrations WHERE version = \(step.version)", logger: logger)
                var present: Int64 = 0
                for try await count in rows.decode(Int64.self) { present = count }
                guard present == 0 else { return false }
                for statement in step.statements { try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger) }
                try await connection.query("INSERT INTO schema_migrations (version, name, applied) VALUES (\(step.version), \(step.name), \(Date().timeIntervalSince1970))", logger: logger)
                return true
            } }
            if did { applied.append(step.version) }
        }
        return applied
    }

    // MARK: Ingest

    /// Every cabinet's sequence as stored: the contiguous seq, the seqs stored above it and the
    /// ranges declared missing.
    public func loadSequences(sites: [String]?, now: Double) async throws -> [String: (site: String, sequence: CabinetSequence)] {
        return try await database.call("loadSequences") { client in
            var out: [String: (site: String, sequence: CabinetSequence)] = [:]
            var contiguous: [String: (String, Int64, Int64?)] = [:]
            for try await (cabinet, site, seq, held) in try await client.query("""
                SELECT cabinet, site, contiguous_seq, ack_held_at FROM cabinets WHERE \(sites)::text[] IS NULL OR site = ANY(\(sites)::text[])
                """, logger: logger).decode((String, String, Int64, Int64?).self) {
                contiguous[cabinet] = (site, seq, held)
            }
            var above: [String: Set<Int64>] = [:]
            for try await (cabinet, seq) in try await client.query("""
                SELECT e.cabinet, e.seq FROM events e JOIN cabinets c USING (cabinet) WHERE e.seq > c.contiguous_seq
                """, logger: logger).decode((String, Int64).self) {
                above[cabinet, default: []].insert(seq)
            }
            var missing: [String: [ClosedRange<Int64>]] = [:]
            for try await (cabinet, from, to) in try await client.query("""
                SELECT m.cabinet, m.seq_from, m.seq_to FROM missing_events m JOIN cabinets c USING (cabinet) WHERE m.seq_to > c.contiguous_seq
                """, logger: logger).decode((String, Int64, Int64).self) {
                missing[cabinet, default: []].append(from...to)
            }
            for (cabinet, (site, seq, held)) in contiguous {
                var sequence = CabinetSequence(contiguous: seq, above: above[cabinet] ?? [], missing: missing[cabinet] ?? [], now: now)
                // F5's hold survives a restart.
                if let held { sequence.freeze(at: held) }
                out[cabinet] = (site, sequence)
            }
            return out
        }
    }

    public struct BatchOutcome: Sendable {
        public var inserted = 0
        public var duplicates = 0
        /// F5: copies that differ in kind or time from the stored event.
        public var conflicts: [FleetMessage.Event] = []
    }

    /// One transaction: the batch's events (a copy of a stored one dropped by the key, and
    /// compared with it), the credit they move, and each touched cabinet's row with its
    /// contiguous seq. Four statements whatever the batch's size (docs/FLEET.md, "Ingest at the
    /// database's speed"); only the copies come back.
    public func commit(_ events: [FleetMessage.Event], sequences: [String: (site: String, sequence: CabinetSequence)], now: Double) async throws -> BatchOutcome {
        return try await database.call("commit") { client in
            let cabinets = sequences.keys.sorted()
            let sites = cabinets.map { sequences[$0]!.site }
            let contiguous = cabinets.map { sequences[$0]!.sequence.contiguous }
            return try await client.withTransaction(logger: logger) { connection -> BatchOutcome in
                var outcome = BatchOutcome()
                if !events.isEmpty {
                    // A batch holds each identity once (`CabinetQueues`), and the statement's own
                    // reads see the table as it stood before it: the rows not inserted are the
                    // copies, each with whether it differs from the stored event.
                    let rows = try await connection.query("""
                        WITH b AS (SELECT * FROM unnest(\(events.map(\.cabinet))::text[], \(events.map(\.seq))::bigint[], \(events.map(\.kind))::text[],
                                                        \(events.map(\.time))::float8[], \(events.map(\.json))::text[]) AS b(cabinet, seq, kind, time, event)),
                             stored AS (INSERT INTO events (cabinet, seq, kind, time, received, event)
                                        SELECT cabinet, seq, kind, time, \(now), event::jsonb->'event' FROM b ON CONFLICT (cabinet, seq) DO NOTHING RETURNING cabinet, seq)
                        SELECT b.cabinet, b.seq, e.seq IS NOT NULL AND (e.kind <> b.kind OR e.time <> b.time)
                        FROM b LEFT JOIN stored USING (cabinet, seq) LEFT JOIN events e USING (cabinet, seq) WHERE stored.seq IS NULL
                        """, logger: logger)
                    var copies: Set<String> = []
                    var conflicting: Set<String> = []
                    for try await (cabinet, seq, conflict) in rows.decode((String, Int64, Bool).self) {
                        copies.insert("\(cabinet)/\(seq)")
                        if conflict { conflicting.insert("\(cabinet)/\(seq)") }
                    }
                    outcome.duplicates = copies.count
                    outcome.inserted = events.count - copies.count
                    // The customer's credit, kept from the first copies in this transaction.
                    let first = copies.isEmpty ? events : events.filter { !copies.contains("\($0.cabinet)/\($0.seq)") }
                    try await Self.keepCredit(connection, cabinets: first.map(\.cabinet), seqs: first.map(\.seq), kinds: Set(first.map(\.kind)), logger: logger)
                    outcome.conflicts = conflicting.isEmpty ? [] : events.filter { conflicting.contains("\($0.cabinet)/\($0.seq)") }
                    for copy in outcome.conflicts {
                        // The ack is held where it stood before this batch (F5), across restarts too.
                        try await connection.query("UPDATE cabinets SET ack_held_at = coalesce(ack_held_at, contiguous_seq) WHERE cabinet = \(copy.cabinet)", logger: logger)
                        try await connection.query("""
                            INSERT INTO event_conflicts (cabinet, seq, received, copy) VALUES (\(copy.cabinet), \(copy.seq), \(now), \(copy.json)::jsonb)
                            ON CONFLICT DO NOTHING
                            """, logger: logger)
                        try await connection.query("""
                            INSERT INTO alerts (cabinet, kind, detail, opened) VALUES (\(copy.cabinet), 'ledger_conflict',
                                \("seq \(copy.seq) arrived as \(copy.kind) at \(copy.time), unlike the stored event: the cabinet's ledger was replaced or restored; its ack is held until an operator acknowledges this"), \(now))
                            ON CONFLICT (cabinet, kind) WHERE closed IS NULL DO NOTHING
                            """, logger: logger)
                    }
                }
                // A new cabinet's row, and every touched one's contiguous seq, in one statement
                // (last, so a conflict above holds the ack where it stood before this batch).
                try await connection.query("""
                    INSERT INTO cabinets (cabinet, site, first_seen, contiguous_seq)
                    SELECT c, s, \(now), q FROM unnest(\(cabinets)::text[], \(sites)::text[], \(contiguous)::bigint[]) AS t(c, s, q)
                    ON CONFLICT (cabinet) DO UPDATE SET contiguous_seq = excluded.contiguous_seq WHERE cabinets.contiguous_seq < excluded.contiguous_seq
                    """, logger: logger)
                return outcome
            }
        }
    }

    /// F8: ranges the cabinet's ledger does not hold, settled for its ack, with an alert an
    /// operator must acknowledge.
    public func recordMissing(cabinet: String, site: String, _ ranges: [ClosedRange<Int64>], sequence: CabinetSequence, now: Double) async throws {
        try await database.call("recordMissing") { client in
            try await client.withTransaction(logger: logger) { connection in
                try await connection.query("INSERT INTO cabinets (cabinet, site, first_seen) VALUES (\(cabinet), \(site), \(now)) ON CONFLICT DO NOTHING", logger: logger)
                for range in ranges {
                    try await connection.query("""
                        INSERT INTO missing_events (cabinet, seq_from, seq_to, recorded) VALUES (\(cabinet), \(range.lowerBound), \(range.upperBound), \(now))
                        ON CONFLICT (cabinet, seq_from) DO UPDATE SET seq_to = greatest(missing_events.seq_to, excluded.seq_to)
                        """, logger: logger)
                }
                let text = ranges.map { $0.lowerBound == $0.upperBound ? "\($0.lowerBound)" : "\($0.lowerBound)…\($0.upperBound)" }.joined(separator: ", ")
                try await connection.query("""
                    INSERT INTO alerts (cabinet, kind, detail, opened) VALUES (\(cabinet), 'events_missing', \("the cabinet's ledger does not hold seq \(text): they are lost to the fleet"), \(now))
                    ON CONFLICT (cabinet, kind) WHERE closed IS NULL DO UPDATE SET detail = alerts.detail || '; ' || excluded.detail
                    """, logger: logger)
                try await connection.query(Self.raisingContiguous(cabinet, to: sequence.contiguous), logger: logger)
            }
        }
    }

    /// A cabinet's contiguous seq raised to `seq`: a range declared missing while its batch was
    /// in flight moved it past what that batch wrote.
    public func raiseContiguous(cabinet: String, to seq: Int64) async throws {
        try await database.call("raiseContiguous") { client in
            _ = try await client.query(Self.raisingContiguous(cabinet, to: seq), logger: logger)
        }
    }

    /// Never lowers it: writes that cross (a batch, a missing range) keep the higher.
    private static func raisingContiguous(_ cabinet: String, to seq: Int64) -> PostgresQuery {
        "UPDATE cabinets SET contiguous_seq = \(seq) WHERE cabinet = \(cabinet) AND contiguous_seq < \(seq)"
    }

    public func saveState(_ state: FleetMessage.State, receivedAt now: Double) async throws {
        try await database.call("saveState") { client in
            let name = state.online ? "online" : "offline"
            let since = state.time ?? now
            try await client.query("""
                INSERT INTO cabinets (cabinet, site, first_seen, state, state_since, state_reason, bridge_version, daemon_version)
                VALUES (\(state.cabinet), \(state.site), \(now), \(name), \(since), \(state.reason), \(state.bridgeVersion), \(state.daemonVersion))
                ON CONFLICT (cabinet) DO UPDATE SET
                    site = excluded.site, state = excluded.state, state_reason = excluded.state_reason,
                    state_since = CASE WHEN cabinets.state = excluded.state THEN cabinets.state_since ELSE excluded.state_since END,
                    bridge_version = coalesce(excluded.bridge_version, cabinets.bridge_version),
                    daemon_version = coalesce(excluded.daemon_version, cabinets.daemon_version)
                """, logger: logger)
        }
    }

    public func saveStatus(cabinet: String, site: String, json: String, now: Double) async throws {
        try await database.call("saveStatus") { client in
            _ = try await client.query("""
                INSERT INTO cabinets (cabinet, site, first_seen, status, status_time) VALUES (\(cabinet), \(site), \(now), \(json)::jsonb, \(now))
                ON CONFLICT (cabinet) DO UPDATE SET status = excluded.status, status_time = excluded.status_time
                """, logger: logger)
        }
    }

    public func saveTotals(cabinet: String, site: String, json: String, now: Double) async throws {
        try await database.call("saveTotals") { client in
            _ = try await client.query("""
                INSERT INTO cabinets (cabinet, site, first_seen, totals, totals_time) VALUES (\(cabinet), \(site), \(now), \(json)::jsonb, \(now))
                ON CONFLICT (cabinet) DO UPDATE SET totals = excluded.totals, totals_time = excluded.totals_time
                """, logger: logger)
        }
    }

    // MARK: Commands

    public func recordCommand(id: String, cabinet: String, name: String, args: String, by: String, now: Double) async throws {
        try await database.call("recordCommand") { client in
            _ = try await client.query("""
                INSERT INTO commands (id, cabinet, name, args, by, sent) VALUES (\(id), \(cabinet), \(name), \(args)::jsonb, \(by), \(now)) ON CONFLICT DO NOTHING
                """, logger: logger)
        }
    }

    public func recordReply(_ reply: FleetMessage.Reply) async throws {
        try await database.call("recordReply") { client in
            _ = try await client.query("""
                UPDATE commands SET reply = \(reply.json)::jsonb, outcome = \(reply.ok ? "ok" : (reply.errorCode ?? "failed"))
                WHERE id = \(reply.id) AND cabinet = \(reply.cabinet) AND reply IS NULL
                """, logger: logger)
        }
    }
}
