import CoinMechModel
import Foundation
import GRDB

extension Ledger {
    /// The highest sequence number recorded (0 for an empty ledger).
    public func lastSeq() throws(LedgerError) -> Int64 {
        try read { db in try Int64.fetchOne(db, sql: "SELECT COALESCE(MAX(seq), 0) FROM events") ?? 0 }
    }

    /// Credit per period, and the pending and unconfirmed accepts for audit.
    public func totals() throws(LedgerError) -> Totals {
        try read { db in
            Totals(current: try LedgerQueries.totalsRows(db, period: "current"), lifetime: try LedgerQueries.totalsRows(db, period: "lifetime"),
                   pending: try LedgerQueries.openRows(db, state: "pending"), unconfirmed: try LedgerQueries.unconfirmedRows(db))
        }
    }

    /// The highest chain generation ever recorded (0 for a new ledger): kept in `meta`, so
    /// asking costs the same with ten events or a million.
    public func chainGeneration() throws(LedgerError) -> UInt64 {
        try read { db in UInt64(try Int64.fetchOne(db, sql: "SELECT value FROM meta WHERE key = 'chain_generation'") ?? 0) }
    }

    /// Where `source`'s device numbering stands: its epoch and boot, last device seq and recent decisions.
    public func sourceState(_ source: String, recentLimit: Int = 256) throws(LedgerError) -> SourceState {
        try read { db in
            let epoch = try Int64.fetchOne(db, sql: "SELECT epoch FROM sources WHERE source = ?", arguments: [source])
                ?? Int64.fetchOne(db, sql: "SELECT MAX(epoch) FROM events WHERE kind = 'decision' AND source = ?", arguments: [source])
                ?? 0
            let boot = try Int64.fetchOne(db, sql: "SELECT boot FROM epochs WHERE source = ? AND epoch = ?", arguments: [source, epoch])
            let rows = try Row.fetchAll(db, sql: """
                SELECT device_seq, diameter_mm, weight_g, thickness_mm, channel, verdict,
                       conductivity_low_iacs, conductivity_high_iacs, permeability FROM events
                WHERE kind = 'decision' AND source = ? AND epoch = ? ORDER BY seq DESC LIMIT ?
                """, arguments: [source, epoch, recentLimit])
            let recent = rows.reversed().map { row in
                var decision = RecentDecision(
                    deviceSeq: UInt64(bitPattern: row["device_seq"]), diameterMM: row["diameter_mm"], weightG: row["weight_g"],
                    thicknessMM: row["thickness_mm"], channel: (row["channel"] as Int64?).map { UInt32($0) },
                    accepted: row["verdict"] == "accept")
                decision.alloy = LedgerQueries.alloy(low: row["conductivity_low_iacs"], high: row["conductivity_high_iacs"], permeability: row["permeability"])
                return decision
            }
            return SourceState(epoch: epoch, boot: boot.map { UInt64($0) }, lastDeviceSeq: recent.map(\.deviceSeq).max(), recent: recent)
        }
    }

    /// Every accept of `source` still waiting for the mech's confirmation, oldest first.
    public func pendingCoins(source: String) throws(LedgerError) -> [PendingRecord] {
        try read { db in
            try Row.fetchAll(db, sql: LedgerQueries.pendingCoins, arguments: [source]).map(LedgerQueries.pendingRecord)
        }
    }

    /// The last `limit` unconfirmed coins of `source` whose epoch has a boot number: the mech
    /// may still have them in its journal, and a stored one is credited late.
    public func unconfirmedCoins(source: String, limit: Int = 64) throws(LedgerError) -> [PendingRecord] {
        try read { db in
            try Row.fetchAll(db, sql: LedgerQueries.unconfirmedCoins, arguments: [source, limit]).map(LedgerQueries.pendingRecord).reversed()
        }
    }

    /// The mech's boot number of each epoch of `source` that has one.
    public func boots(source: String) throws(LedgerError) -> [Int64: UInt64] {
        try read { db in
            var boots: [Int64: UInt64] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT epoch, boot FROM epochs WHERE source = ? AND boot IS NOT NULL", arguments: [source]) {
                boots[row["epoch"]] = UInt64(row["boot"] as Int64)
            }
            return boots
        }
    }

    /// The last `limit` events of `kind`, newest first (collections without their rows).
    public func latestEvents(of kind: EventKind, limit: Int) throws(LedgerError) -> [LedgerEvent] {
        try read { db in
            try Row.fetchAll(db, sql: "SELECT \(LedgerQueries.eventColumns) FROM events WHERE kind = ? ORDER BY seq DESC LIMIT ?",
                             arguments: [kind.rawValue, limit]).map(LedgerQueries.event)
        }
    }

    /// Events with `seq` greater than `since`, oldest first, at most `limit`; a collection comes
    /// with its rows.
    public func events(since: Int64, limit: Int = 1000) throws(LedgerError) -> [LedgerEvent] {
        try read { db in
            var events = try Row.fetchAll(db, sql: "SELECT \(LedgerQueries.eventColumns) FROM events WHERE seq > ? ORDER BY seq LIMIT ?",
                                      arguments: [since, limit])
                .map(LedgerQueries.event)
            for index in events.indices where events[index].kind == EventKind.collect.rawValue {
                let rows = try Row.fetchAll(db, sql: """
                    SELECT state, currency, denomination, count, value_minor, weight_g FROM collections
                    WHERE collect_seq = ? ORDER BY currency, value_minor DESC
                    """, arguments: [events[index].seq])
                events[index].collected = rows.filter { $0["state"] == "credited" }.map(LedgerQueries.row)
                events[index].collectedUnconfirmed = rows.filter { $0["state"] == "unconfirmed" }.map(LedgerQueries.row)
            }
            return events
        }
    }
}

/// SQL shared by the writer and the readers.
enum LedgerQueries {
    /// The condition of the partial index `events_open` (LedgerSchema), word for word: SQLite
    /// uses a partial index only when the query states its condition, and does not infer it from
    /// `state = 'pending'`. Without it, asking for the pending coins read every event (about
    /// 250 ms at every start with a million events).
    static let openStates = "state IN ('pending', 'unconfirmed')"

    /// A source's pending accepts with their epoch's boot (read at every start). Argument: source.
    static let pendingCoins = """
        SELECT e.seq, e.epoch, e.device_seq, e.time, p.boot FROM events e
        LEFT JOIN epochs p ON p.source = e.source AND p.epoch = e.epoch
        WHERE \(openStates) AND e.state = 'pending' AND e.source = ? ORDER BY e.seq
        """

    /// A row of `pendingCoins` or `unconfirmedCoins`.
    static func pendingRecord(_ row: Row) -> PendingRecord {
        PendingRecord(seq: row["seq"], epoch: row["epoch"], boot: (row["boot"] as Int64?).map { UInt64($0) },
                      deviceSeq: UInt64(bitPattern: row["device_seq"]), time: row["time"])
    }

    static let unconfirmedCoins = """
        SELECT e.seq, e.epoch, e.device_seq, e.time, p.boot FROM events e
        JOIN epochs p ON p.source = e.source AND p.epoch = e.epoch
        WHERE \(openStates) AND e.state = 'unconfirmed' AND e.source = ? AND p.boot IS NOT NULL ORDER BY e.seq DESC LIMIT ?
        """

    /// Accepts in one open state, summed like totals (`totals`). Argument: the state.
    static let openRowsSQL = """
        SELECT currency, denomination, COUNT(*) AS count, SUM(value_minor) AS value_minor, COALESCE(SUM(weight_g), 0) AS weight_g
        FROM events WHERE \(openStates) AND state = ? AND kind = 'decision' GROUP BY currency, denomination ORDER BY currency, value_minor DESC
        """

    /// The columns `event(_:)` reads, in its order: rows are read by position, since a lookup by
    /// name folds the case of every name and cost more than the rest of the coin's path.
    static let eventColumns = """
        seq, time, kind, source, epoch, device_seq, diameter_mm, weight_g, thickness_mm, channel, verdict, currency,
        denomination, value_minor, link, reason, message, chain_generation, detail, state, ref_seq,
        conductivity_low_iacs, conductivity_high_iacs, permeability
        """

    /// An event from a row selected as `SELECT \(eventColumns) FROM events`.
    static func event(_ row: Row) -> LedgerEvent {
        var event = LedgerEvent(
            seq: row[0], time: row[1], kind: row[2], source: row[3], epoch: row[4],
            deviceSeq: row[5], diameterMM: row[6], weightG: row[7], thicknessMM: row[8],
            channel: row[9], verdict: row[10], currency: row[11], denomination: row[12],
            valueMinor: row[13], link: row[14], reason: row[15], message: row[16],
            chainGeneration: row[17], detail: row[18], state: row[19], refSeq: row[20])
        event.conductivityLowIACS = row[21]
        event.conductivityHighIACS = row[22]
        event.permeability = row[23]
        return event
    }

    /// The alloy axis of a row: both conductivities, or none.
    static func alloy(low: Double?, high: Double?, permeability: Double?) -> AlloySignature? {
        guard let low, let high else { return nil }
        return AlloySignature(lowIACS: low, highIACS: high, permeability: permeability)
    }

    static func totalsRows(_ db: Database, period: String) throws -> [TotalsRow] {
        try Row.fetchAll(db, sql: """
            SELECT currency, denomination, count, value_minor, weight_g FROM totals WHERE period = ? ORDER BY currency, value_minor DESC
            """, arguments: [period]).map(row)
    }

    /// Accepts in `state` (`pending`), summed like totals.
    static func openRows(_ db: Database, state: String) throws -> [TotalsRow] {
        try Row.fetchAll(db, sql: openRowsSQL, arguments: [state]).map(row)
    }

    /// Coins settled as unconfirmed since the last collection.
    static func unconfirmedRows(_ db: Database) throws -> [TotalsRow] {
        try Row.fetchAll(db, sql: """
            SELECT currency, denomination, COUNT(*) AS count, SUM(value_minor) AS value_minor, COALESCE(SUM(weight_g), 0) AS weight_g
            FROM events WHERE kind = 'coin_unconfirmed'
              AND seq > COALESCE((SELECT MAX(seq) FROM events WHERE kind = 'collect'), 0)
            GROUP BY currency, denomination ORDER BY currency, value_minor DESC
            """).map(row)
    }

    static func row(_ row: Row) -> TotalsRow {
        TotalsRow(currency: row["currency"], denomination: row["denomination"], count: row["count"],
                  valueMinor: row["value_minor"], weightG: row["weight_g"])
    }
}
