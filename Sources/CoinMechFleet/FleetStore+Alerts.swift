import Foundation
import PostgresNIO

extension FleetStore {
    /// What the alert rules need of every cabinet, read in one query (the seq gap is the
    /// ingest's own, added by the caller).
    public func alertFacts(sites: [String]?) async throws -> [AlertRules.Facts] {
        return try await database.call("alertFacts") { client in
            let rows = try await client.query("""
                SELECT c.cabinet, c.state, c.state_since, c.first_seen,
                    (SELECT e.time FROM events e WHERE e.cabinet = c.cabinet AND e.kind = 'coin' ORDER BY e.seq DESC LIMIT 1),
                    (SELECT coalesce(e.event->'detail'->>'status', '') FROM events e WHERE e.cabinet = c.cabinet AND e.kind = 'mech_status' ORDER BY e.seq DESC LIMIT 1),
                    coalesce(c.status->>'ledger', 'ok') = 'failing',
                    coalesce((SELECT string_agg(p->>'link', ',') FROM jsonb_array_elements(
                        CASE WHEN jsonb_typeof(c.status->'link_problems') = 'array' THEN c.status->'link_problems' ELSE '[]'::jsonb END) p
                        WHERE p->>'state' = 'quarantined'), ''),
                    \(unescaped: Self.count("c.status->'unconfirmed'")),
                    \(unescaped: Self.count("c.status->'acceptor'->'lost_events'"))
                FROM cabinets c WHERE \(sites)::text[] IS NULL OR c.site = ANY(\(sites)::text[]) ORDER BY c.cabinet
                """, logger: logger)
            var out: [AlertRules.Facts] = []
            for try await (cabinet, state, since, firstSeen, lastCredit, mechStatus, failing, quarantined, unconfirmed, lost)
                in rows.decode((String, String, Double?, Double, Double?, String?, Bool, String, Int64, Int64).self) {
                out.append(AlertRules.Facts(
                    cabinet: cabinet, online: state == "unknown" ? nil : state == "online", stateSince: since, firstSeen: firstSeen, lastCredit: lastCredit,
                    mechStatus: mechStatus, ledgerFailing: failing, quarantinedLinks: quarantined.split(separator: ",").map(String.init),
                    unconfirmed: Int(unconfirmed), acceptorLostEvents: Int(lost), hole: nil, holeSince: nil))
            }
            return out
        }
    }

    /// A count from a cabinet's `status` (jsonb): a number, floored and held to 0 … 2^31 − 1;
    /// anything else is 0. A status no bridge would send cannot stop the rules for every cabinet.
    static func count(_ json: String) -> String {
        "CASE WHEN jsonb_typeof(\(json)) = 'number' THEN least(greatest(floor((\(json))::text::numeric), 0), 2147483647)::bigint ELSE 0 END"
    }

    /// Opens a row for each condition without an open one, and closes the open rows of the
    /// rules' kinds whose condition has gone. Returns the cabinets with an open `ledger_conflict`.
    public func reconcileAlerts(_ conditions: [(cabinet: String, condition: AlertRules.Condition)], sites: [String]?, now: Double) async throws -> Set<String> {
        return try await database.call("reconcileAlerts") { client in
            let cabinets = conditions.map(\.cabinet), kinds = conditions.map(\.condition.kind), details = conditions.map(\.condition.detail)
            let ruled = Array(AlertRules.kinds)
            return try await client.withTransaction(logger: logger) { connection -> Set<String> in
                try await connection.query("""
                    INSERT INTO alerts (cabinet, kind, detail, opened)
                    SELECT c, k, d, \(now) FROM unnest(\(cabinets)::text[], \(kinds)::text[], \(details)::text[]) AS t(c, k, d)
                    ON CONFLICT (cabinet, kind) WHERE closed IS NULL DO NOTHING
                    """, logger: logger)
                try await connection.query("""
                    UPDATE alerts SET closed = \(now) WHERE closed IS NULL AND kind = ANY(\(ruled)::text[])
                    AND (\(sites)::text[] IS NULL OR cabinet IN (SELECT cabinet FROM cabinets WHERE site = ANY(\(sites)::text[])))
                    AND NOT EXISTS (SELECT 1 FROM unnest(\(cabinets)::text[], \(kinds)::text[]) AS t(c, k) WHERE t.c = alerts.cabinet AND t.k = alerts.kind)
                    """, logger: logger)
                var frozen: Set<String> = []
                for try await cabinet in try await connection.query("SELECT cabinet FROM alerts WHERE kind = 'ledger_conflict' AND closed IS NULL", logger: logger).decode(String.self) {
                    frozen.insert(cabinet)
                }
                return frozen
            }
        }
    }

    /// The `refused_messages` alert of each cabinet that had messages refused since the last
    /// save: one open per cabinet, its detail kept current (`CabinetRefusals`).
    public func saveRefusals(_ refused: [(cabinet: String, detail: String)], now: Double) async throws {
        guard !refused.isEmpty else { return }
        let cabinets = refused.map(\.cabinet), details = refused.map(\.detail)
        try await database.call("saveRefusals") { client in
            _ = try await client.query("""
                INSERT INTO alerts (cabinet, kind, detail, opened) SELECT c, 'refused_messages', d, \(now) FROM unnest(\(cabinets)::text[], \(details)::text[]) AS t(c, d)
                ON CONFLICT (cabinet, kind) WHERE closed IS NULL DO UPDATE SET detail = excluded.detail
                """, logger: logger)
        }
    }

    /// An operator acknowledged an alert: noted; `events_missing`, `ledger_conflict` and
    /// `refused_messages`, which no rule closes, are closed by it. False if there is no such open alert.
    public func acknowledgeAlert(id: Int64, by: String, now: Double) async throws -> Bool {
        return try await database.call("acknowledgeAlert") { client in
            var found = false
            for try await _ in try await client.query("""
                WITH acked AS (UPDATE alerts SET acked_by = \(by), acked_at = \(now),
                                   closed = CASE WHEN kind IN ('events_missing', 'ledger_conflict', 'refused_messages') THEN \(now) ELSE closed END
                               WHERE id = \(id) AND closed IS NULL RETURNING id, cabinet, kind),
                     released AS (UPDATE cabinets SET ack_held_at = NULL FROM acked
                                  WHERE cabinets.cabinet = acked.cabinet AND acked.kind = 'ledger_conflict' RETURNING 1)
                SELECT id FROM acked
                """, logger: logger).decode(Int64.self) {
                found = true
            }
            return found
        }
    }
}
