import Foundation
import PostgresNIO

extension FleetStore {
    /// Why a call failed, for a person: PSQLError's description hides the server's words (its
    /// reflection has them).
    public static func reason(_ error: any Error) -> String {
        error is PSQLError ? String(String(reflecting: error).prefix(400)) : "\(error)"
    }

    /// One cabinet's EVA-DTS audit for `from ≤ time < to` (docs/FLEET.md, "DEX export"), read from
    /// that cabinet's rows alone (the key (cabinet, seq) and `events_cabinet_kind`); nil if the
    /// fleet has never heard of it. `currency` picks one when its ledger holds several.
    public func dexAudit(cabinet: String, from: Double, to: Double, currency: String?) async throws -> DEXAudit? {
        guard let site = try await site(of: cabinet) else { return nil }
        let ref = Self.wholeNumber("c.event->>'ref_seq'"), paid = Self.wholeNumber("s.event->'detail'->>'paid_minor'")
        return try await database.call("a DEX audit") { client in
            // Coins (F4: money from `coin` events), by currency, by where they went (an MDB
            // changer's decision says `routing`; a mech without tubes says nothing: its cash box)
            // and by period.
            var coins: [(currency: String, tube: Bool, recent: Bool, value: Int64)] = []
            for try await row in try await client.query("""
                SELECT coalesce(c.currency, '?'), coalesce(c.event->'detail'->>'routing', d.event->'detail'->>'routing', '') = 'tube', c.time >= \(from),
                       \(unescaped: Self.bigint("sum(c.value_minor)"))
                FROM events c LEFT JOIN events d ON d.cabinet = c.cabinet AND d.seq = \(unescaped: ref)
                WHERE c.cabinet = \(cabinet) AND c.kind = 'coin' AND c.time < \(to) GROUP BY 1, 2, 3
                """, logger: logger).decode((String, Bool, Bool, Int64).self) {
                coins.append(row)
            }
            // Payouts settled, by the changer's or the hoppers' own count, in the currency their
            // request named.
            var payouts: [(currency: String, recent: Bool, value: Int64)] = []
            for try await row in try await client.query("""
                SELECT coalesce(r.event->'detail'->>'currency', '?'), s.time >= \(from), \(unescaped: Self.bigint("sum(\(paid))"))
                FROM events s LEFT JOIN LATERAL (SELECT event FROM events r WHERE r.cabinet = s.cabinet AND r.kind = 'payout_requested'
                                                 AND r.event->'detail'->>'request_id' = s.event->'detail'->>'request_id' ORDER BY r.seq DESC LIMIT 1) r ON true
                WHERE s.cabinet = \(cabinet) AND s.kind IN ('payout_done', 'payout_partial', 'payout_failed') AND s.time < \(to) GROUP BY 1, 2
                """, logger: logger).decode((String, Bool, Int64).self) {
                payouts.append(row)
            }
            // Counts and the state at `to` of what EA2 reports, and manual dispenses (which the
            // fleet cannot value).
            var manual = (recent: Int64(0), all: Int64(0)), jams = (recent: Int64(0), all: Int64(0)), lost = (recent: Int64(0), all: Int64(0))
            var jammed = false, away = false
            for try await (recentManual, allManual, recentJams, allJams, recentLost, allLost, lastStatus, lastLink) in try await client.query("""
                SELECT count(*) FILTER (WHERE kind = 'tubes_counted' AND event->'detail'->>'cause' = 'manual dispense' AND time >= \(from)),
                       count(*) FILTER (WHERE kind = 'tubes_counted' AND event->'detail'->>'cause' = 'manual dispense'),
                       count(*) FILTER (WHERE kind = 'mech_status' AND upper(event->'detail'->>'status') = 'JAM' AND time >= \(from)),
                       count(*) FILTER (WHERE kind = 'mech_status' AND upper(event->'detail'->>'status') = 'JAM'),
                       count(*) FILTER (WHERE kind = 'source_lost' AND time >= \(from)),
                       count(*) FILTER (WHERE kind = 'source_lost'),
                       (SELECT upper(event->'detail'->>'status') FROM events WHERE cabinet = \(cabinet) AND kind = 'mech_status' AND time < \(to) ORDER BY seq DESC LIMIT 1),
                       (SELECT kind FROM events WHERE cabinet = \(cabinet) AND kind IN ('source_lost', 'source_connected') AND time < \(to) ORDER BY seq DESC LIMIT 1)
                FROM events WHERE cabinet = \(cabinet) AND kind IN ('tubes_counted', 'mech_status', 'source_lost') AND time < \(to)
                """, logger: logger).decode((Int64, Int64, Int64, Int64, Int64, Int64, String?, String?).self) {
                manual = (recentManual, allManual)
                jams = (recentJams, allJams)
                lost = (recentLost, allLost)
                jammed = lastStatus == "JAM"
                away = lastLink == "source_lost"
            }
            // The coin mechanism as it last named itself before `to`.
            var mech: DEXAudit.CoinMech?
            for try await (serial, product, software) in try await client.query("""
                SELECT event->'detail'->>'serial_number', event->'detail'->>'product', event->'detail'->>'software' FROM events
                WHERE cabinet = \(cabinet) AND kind = 'acceptor_identified' AND time < \(to) ORDER BY seq DESC LIMIT 1
                """, logger: logger).decode((String?, String?, String?).self) {
                mech = DEXAudit.CoinMech(serialNumber: serial, model: product, softwareRevision: software)
            }

            let held = Set(coins.map(\.currency) + payouts.map(\.currency)).subtracting(["?"]).sorted()
            let chosen: String?
            if let currency {
                chosen = currency
            } else if held.count > 1 {
                throw DEXError("cabinet \(cabinet)'s ledger holds money in \(held.joined(separator: ", ")): name one (--currency)")
            } else {
                chosen = held.first
            }
            func sum(_ rows: [(currency: String, tube: Bool, recent: Bool, value: Int64)], recentOnly: Bool, _ keep: (Bool) -> Bool) -> Int64 {
                rows.filter { $0.currency == chosen && keep($0.tube) && (!recentOnly || $0.recent) }.reduce(Int64(0)) { $0.addingReportingOverflow($1.value).partialValue }
            }
            let paidRecent = payouts.filter { $0.currency == chosen && $0.recent }.reduce(Int64(0)) { $0 &+ $1.value }
            let paidAll = payouts.filter { $0.currency == chosen }.reduce(Int64(0)) { $0 &+ $1.value }
            let anyPayout = !payouts.isEmpty || manual.all > 0
            return DEXAudit(
                cabinet: cabinet, site: site, currency: chosen, from: from, to: to, coinMech: mech,
                cashIn: .init(sum(coins, recentOnly: true) { _ in true }, sum(coins, recentOnly: false) { _ in true }),
                toCashBox: .init(sum(coins, recentOnly: true) { !$0 }, sum(coins, recentOnly: false) { !$0 }),
                toTubes: .init(sum(coins, recentOnly: true) { $0 }, sum(coins, recentOnly: false) { $0 }),
                dispensedSinceReset: anyPayout && manual.recent == 0 ? paidRecent : nil,
                dispensedSinceInitialisation: anyPayout && manual.all == 0 ? paidAll : nil,
                // Appendix, Table 1 (coin mechanism): EAG a jam in an indeterminate part of the
                // changer (mech_status JAM says no more); EAR a comms error between the mech and
                // its host (the daemon lost the source).
                events: [.init(code: "EAG", count: .init(jams.recent, jams.all), active: jammed),
                         .init(code: "EAR", count: .init(lost.recent, lost.all), active: away)])
        }
    }
}
