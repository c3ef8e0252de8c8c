import CoinMechModel
import Foundation
import GRDB

/// Thrown inside a transaction to roll it back when its precondition does not hold.
struct LedgerPrecondition: Error {
    let message: String
}

extension Ledger {
    /// The counter row of the acceptor at `address` of `source`, nil if none was ever recorded.
    public func acceptorCounter(source: String, address: UInt8) throws(LedgerError) -> AcceptorCounter? {
        try read { db in try Self.counterRow(db, source: source, address: address) }
    }

    /// Records `entries` and moves the counter row, in one transaction, only if the row still
    /// holds `change.before`; otherwise nothing is written and the row's content comes back.
    public func append(_ entries: [LedgerEntry], moving change: AcceptorCounterChange,
                       busyTimeoutMilliseconds: Int = Ledger.defaultBusyTimeoutMilliseconds) throws(LedgerError) -> AcceptorAppend {
        do throws(LedgerError) {
            return .applied(try transact(entries, busyTimeoutMilliseconds: busyTimeoutMilliseconds) { db in try Self.move(db, change) })
        } catch .precondition {
            return .counterMoved(current: try acceptorCounter(source: change.source, address: change.address))
        }
    }

    /// Events of `source` lost to buffer overruns since the last collection (the `count` of
    /// its `cctalk_lost` events).
    public func acceptorLostEvents(source: String) throws(LedgerError) -> Int {
        try read { db in
            try Int.fetchOne(db, sql: """
                SELECT COALESCE(SUM(CAST(json_extract(detail, '$.count') AS INTEGER)), 0) FROM events
                WHERE kind = 'cctalk_lost' AND source = ? AND seq > COALESCE((SELECT MAX(seq) FROM events WHERE kind = 'collect'), 0)
                """, arguments: [source]) ?? 0
        }
    }

    /// The detail of the last `acceptor_identified` event of `source` (who answered, and the
    /// coin of each position), nil if none was recorded.
    public func lastAcceptorIdentification(source: String) throws(LedgerError) -> [String: String]? {
        try read { db in
            guard let json = try String.fetchOne(db, sql: """
                SELECT detail FROM events WHERE kind = 'acceptor_identified' AND source = ? ORDER BY seq DESC LIMIT 1
                """, arguments: [source]) else { return nil }
            return (try? JSONSerialization.jsonObject(with: Data(json.utf8))) as? [String: String]
        }
    }

    static func counterRow(_ db: Database, source: String, address: UInt8) throws -> AcceptorCounter? {
        guard let row = try Row.fetchOne(db, sql: """
            SELECT epoch, event_number, last_results, serial_number, expects_restart FROM cctalk_counters WHERE source = ? AND address = ?
            """, arguments: [source, Int64(address)]) else { return nil }
        let results: Data = row["last_results"]
        return AcceptorCounter(epoch: UInt64(bitPattern: row["epoch"]), eventNumber: UInt64(bitPattern: row["event_number"]),
                               lastResults: Array(results), serialNumber: (row["serial_number"] as Int64?).map { UInt32(truncatingIfNeeded: $0) },
                               expectsRestart: row["expects_restart"] as Bool)
    }

    /// The compare-and-set: an insert where no row may be, an update of exactly the row `before`.
    private static func move(_ db: Database, _ change: AcceptorCounterChange) throws {
        let after = change.after
        let values: [(any DatabaseValueConvertible)?] = [
            Int64(bitPattern: after.epoch), Int64(bitPattern: after.eventNumber), Data(after.lastResults),
            after.serialNumber.map { Int64($0) }, after.expectsRestart,
        ]
        if let before = change.before {
            try db.execute(sql: """
                UPDATE cctalk_counters SET epoch = ?, event_number = ?, last_results = ?, serial_number = ?, expects_restart = ?
                WHERE source = ? AND address = ? AND epoch = ? AND event_number = ? AND last_results = ? AND serial_number IS ? AND expects_restart = ?
                """, arguments: StatementArguments(values + [
                    change.source, Int64(change.address), Int64(bitPattern: before.epoch), Int64(bitPattern: before.eventNumber),
                    Data(before.lastResults), before.serialNumber.map { Int64($0) }, before.expectsRestart,
                ]))
        } else {
            try db.execute(sql: """
                INSERT INTO cctalk_counters (epoch, event_number, last_results, serial_number, expects_restart, source, address)
                VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING
                """, arguments: StatementArguments(values + [change.source, Int64(change.address)]))
        }
        guard db.changesCount == 1 else {
            throw LedgerPrecondition(message: "the counter of \(change.source) address \(change.address) no longer holds the batch's starting point")
        }
    }
}
