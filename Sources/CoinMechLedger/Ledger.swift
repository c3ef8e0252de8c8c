import CoinMechChain
import Foundation
import GRDB

/// The durable record: every decision and operator action, and the totals, in SQLite (WAL,
/// `synchronous=FULL`) at `<state dir>/ledger.sqlite3`. The operator can read it with the
/// `sqlite3` shell; the schema is in docs/LEDGER.md.
///
/// `append` is one transaction: when it returns, its entries survive `kill -9` and power loss.
public final class Ledger: Sendable {
    public let path: String
    private let pool: DatabasePool

    public static let fileName = "ledger.sqlite3"

    /// Opens (creating if needed) the ledger in `directory` and brings its schema up to date.
    public init(directory: String, maximumPageCount: Int? = nil) throws(LedgerError) {
        path = "\(directory)/\(Self.fileName)"
        var configuration = Configuration()
        configuration.busyMode = .timeout(5)
        configuration.label = "ledger"
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA synchronous = FULL")
            if let maximumPageCount { try db.execute(sql: "PRAGMA max_page_count = \(maximumPageCount)") }
        }
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            pool = try DatabasePool(path: path, configuration: configuration)
            try Self.migrator.migrate(pool)
        } catch {
            throw .open(path: path, message: Self.message(error))
        }
    }

    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in
            try db.execute(sql: """
                CREATE TABLE events (
                    seq INTEGER PRIMARY KEY AUTOINCREMENT,
                    time REAL NOT NULL,
                    kind TEXT NOT NULL,
                    source TEXT,
                    epoch INTEGER,
                    device_seq INTEGER,
                    diameter_mm REAL,
                    weight_g REAL,
                    thickness_mm REAL,
                    channel INTEGER,
                    verdict TEXT CHECK (verdict IN ('accept', 'reject')),
                    currency TEXT,
                    denomination TEXT,
                    value_minor INTEGER,
                    link TEXT,
                    reason TEXT,
                    message TEXT,
                    chain_generation INTEGER,
                    detail TEXT
                );
                CREATE UNIQUE INDEX events_reading ON events(source, epoch, device_seq) WHERE kind = 'decision';
                CREATE INDEX events_kind ON events(kind, seq);
                CREATE TABLE totals (
                    period TEXT NOT NULL CHECK (period IN ('current', 'lifetime')),
                    currency TEXT NOT NULL,
                    denomination TEXT NOT NULL,
                    count INTEGER NOT NULL,
                    value_minor INTEGER NOT NULL,
                    weight_g REAL NOT NULL,
                    PRIMARY KEY (period, currency, denomination)
                ) WITHOUT ROWID;
                CREATE TABLE sources (
                    source TEXT PRIMARY KEY,
                    epoch INTEGER NOT NULL
                ) WITHOUT ROWID;
                """)
        }
        return migrator
    }

    /// Records `entries` in one transaction and returns them as recorded, with their `seq`.
    /// Accepted decisions add to both periods' totals in the same transaction.
    @discardableResult
    public func append(_ entries: [LedgerEntry]) throws(LedgerError) -> [LedgerEvent] {
        guard !entries.isEmpty else { return [] }
        let now = Date().timeIntervalSince1970
        do {
            return try pool.write { db in
                var recorded: [LedgerEvent] = []
                for entry in entries {
                    switch entry {
                    case .decision(let source, let epoch, let reading, let decision):
                        recorded.append(try Self.insertDecision(db, time: now, source: source, epoch: epoch, reading: reading, decision: decision))
                    case .event(let kind, let source, let detail):
                        recorded.append(try Self.insertEvent(db, time: now, kind: kind, source: source, detail: detail))
                    case .collect(let by):
                        recorded.append(try Self.collect(db, time: now, by: by))
                    }
                }
                return recorded
            }
        } catch let error as DatabaseError where error.resultCode == .SQLITE_FULL {
            throw .full(message: Self.message(error))
        } catch {
            throw .write(message: Self.message(error))
        }
    }

    private static func insertDecision(_ db: Database, time: Double, source: String, epoch: Int64, reading: Reading, decision: Decision) throws -> LedgerEvent {
        let verdict = decision.verdict
        var currency: String?, denomination: String?, value: Int64?, reason: String?, message: String?
        switch verdict {
        case .accept(let d): (currency, denomination, value) = (d.currency, d.code, d.valueMinor)
        case .reject(let r): (reason, message) = (r.reason, r.message)
        }
        // Cached statements: compiled once per connection, not per coin.
        try db.cachedStatement(sql: """
            INSERT INTO events (time, kind, source, epoch, device_seq, diameter_mm, weight_g, thickness_mm, channel,
                                verdict, currency, denomination, value_minor, link, reason, message, chain_generation)
            VALUES (?, 'decision', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """).execute(arguments: [
                time, source, epoch, Int64(bitPattern: reading.deviceSeq), reading.diameterMM, reading.weightG, reading.thicknessMM,
                reading.channel.map { Int64($0) }, verdict.isAccept ? "accept" : "reject", currency, denomination, value,
                decision.linkName, reason, message, Int64(bitPattern: decision.chainGeneration),
            ])
        let seq = db.lastInsertedRowID
        if let currency, let denomination, let value {
            for period in ["current", "lifetime"] {
                try db.cachedStatement(sql: """
                    INSERT INTO totals (period, currency, denomination, count, value_minor, weight_g) VALUES (?, ?, ?, 1, ?, ?)
                    ON CONFLICT (period, currency, denomination) DO UPDATE SET
                        count = count + 1, value_minor = value_minor + excluded.value_minor, weight_g = weight_g + excluded.weight_g
                    """).execute(arguments: [period, currency, denomination, value, reading.weightG ?? 0])
            }
        }
        return LedgerEvent(
            seq: seq, time: time, kind: EventKind.decision.rawValue, source: source, epoch: epoch,
            deviceSeq: Int64(bitPattern: reading.deviceSeq), diameterMM: reading.diameterMM, weightG: reading.weightG,
            thicknessMM: reading.thicknessMM, channel: reading.channel.map { Int64($0) }, verdict: verdict.isAccept ? "accept" : "reject",
            currency: currency, denomination: denomination, valueMinor: value, link: decision.linkName, reason: reason,
            message: message, chainGeneration: Int64(bitPattern: decision.chainGeneration), detail: nil)
    }

    private static func insertEvent(_ db: Database, time: Double, kind: EventKind, source: String?, detail: [String: String]) throws -> LedgerEvent {
        let json = detail.isEmpty ? nil : String(decoding: try JSONSerialization.data(withJSONObject: detail, options: [.sortedKeys]), as: UTF8.self)
        let epoch = kind == .mechPowerUp ? detail["epoch"].flatMap { Int64($0) } : nil
        try db.execute(sql: "INSERT INTO events (time, kind, source, epoch, detail) VALUES (?, ?, ?, ?, ?)",
                       arguments: [time, kind.rawValue, source, epoch, json])
        let seq = db.lastInsertedRowID
        if let source, let epoch {
            try db.execute(sql: "INSERT INTO sources (source, epoch) VALUES (?, ?) ON CONFLICT (source) DO UPDATE SET epoch = excluded.epoch",
                           arguments: [source, epoch])
        }
        return LedgerEvent(seq: seq, time: time, kind: kind.rawValue, source: source, epoch: epoch, detail: json)
    }

    private static func collect(_ db: Database, time: Double, by: String) throws -> LedgerEvent {
        let rows = try Self.rows(db, period: "current")
        let collected = String(decoding: try JSONEncoder.sorted.encode(rows), as: UTF8.self)
        let event = try insertEvent(db, time: time, kind: .collect, source: nil, detail: ["by": by, "collected": collected])
        try db.execute(sql: "DELETE FROM totals WHERE period = 'current'")
        return event
    }

    static func rows(_ db: Database, period: String) throws -> [TotalsRow] {
        try Row.fetchAll(db, sql: """
            SELECT currency, denomination, count, value_minor, weight_g FROM totals WHERE period = ? ORDER BY currency, value_minor DESC
            """, arguments: [period]).map {
            TotalsRow(currency: $0["currency"], denomination: $0["denomination"], count: $0["count"],
                      valueMinor: $0["value_minor"], weightG: $0["weight_g"])
        }
    }

    // MARK: Reading

    /// The highest sequence number recorded (0 for an empty ledger).
    public func lastSeq() throws(LedgerError) -> Int64 {
        try read { db in try Int64.fetchOne(db, sql: "SELECT COALESCE(MAX(seq), 0) FROM events") ?? 0 }
    }

    public func totals() throws(LedgerError) -> Totals {
        try read { db in Totals(current: try Self.rows(db, period: "current"), lifetime: try Self.rows(db, period: "lifetime")) }
    }

    /// Where `source`'s device numbering stands: its epoch, last device seq and recent decisions.
    public func sourceState(_ source: String, recentLimit: Int = 256) throws(LedgerError) -> SourceState {
        try read { db in
            let epoch = try Int64.fetchOne(db, sql: "SELECT epoch FROM sources WHERE source = ?", arguments: [source])
                ?? Int64.fetchOne(db, sql: "SELECT MAX(epoch) FROM events WHERE kind = 'decision' AND source = ?", arguments: [source])
                ?? 0
            let rows = try Row.fetchAll(db, sql: """
                SELECT device_seq, diameter_mm, weight_g, thickness_mm, channel, verdict FROM events
                WHERE kind = 'decision' AND source = ? AND epoch = ? ORDER BY seq DESC LIMIT ?
                """, arguments: [source, epoch, recentLimit])
            let recent = rows.reversed().map { row in
                RecentDecision(
                    deviceSeq: UInt64(bitPattern: row["device_seq"]), diameterMM: row["diameter_mm"], weightG: row["weight_g"],
                    thicknessMM: row["thickness_mm"], channel: (row["channel"] as Int64?).map { UInt32($0) },
                    accepted: row["verdict"] == "accept")
            }
            return SourceState(epoch: epoch, lastDeviceSeq: recent.map(\.deviceSeq).max(), recent: recent)
        }
    }

    /// Events with `seq` greater than `since`, oldest first, at most `limit`.
    public func events(since: Int64, limit: Int = 1000) throws(LedgerError) -> [LedgerEvent] {
        try read { db in
            try Row.fetchAll(db, sql: "SELECT * FROM events WHERE seq > ? ORDER BY seq LIMIT ?", arguments: [since, limit]).map(Self.event)
        }
    }

    static func event(_ row: Row) -> LedgerEvent {
        LedgerEvent(
            seq: row["seq"], time: row["time"], kind: row["kind"], source: row["source"], epoch: row["epoch"],
            deviceSeq: row["device_seq"], diameterMM: row["diameter_mm"], weightG: row["weight_g"], thicknessMM: row["thickness_mm"],
            channel: row["channel"], verdict: row["verdict"], currency: row["currency"], denomination: row["denomination"],
            valueMinor: row["value_minor"], link: row["link"], reason: row["reason"], message: row["message"],
            chainGeneration: row["chain_generation"], detail: row["detail"])
    }

    private func read<T>(_ body: (Database) throws -> T) throws(LedgerError) -> T {
        do {
            return try pool.read(body)
        } catch {
            throw .read(message: Self.message(error))
        }
    }

    static func message(_ error: any Error) -> String {
        if let error = error as? DatabaseError { return error.message ?? "\(error.resultCode)" }
        return "\(error)"
    }
}

extension JSONEncoder {
    static var sorted: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        encoder.keyEncodingStrategy = .convertToSnakeCase
        return encoder
    }
}
