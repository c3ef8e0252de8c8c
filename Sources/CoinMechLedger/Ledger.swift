import CoinMechModel
import Foundation
import GRDB
import GRDBSQLite

/// The durable record: every decision, credit and operator action, and the totals, in SQLite
/// (WAL, `synchronous=FULL`) at `<state dir>/ledger.sqlite3`. The operator can read it with
/// the `sqlite3` shell; the schema is in docs/LEDGER.md.
///
/// `append` is one transaction: when it returns, its entries survive `kill -9` and power loss.
/// Totals move only with a `coin` event, in the same transaction, and a decision is settled at
/// most once (a unique index on the settling event's `ref_seq`): no coin is credited twice.
public final class Ledger: Sendable {
    public let path: String
    /// The directory holding the ledger (and the decision journal beside it).
    public let directory: String
    /// The size limit (`ledger.max_size_mb`) in pages; nil for none.
    public let maximumPageCount: Int?
    let pool: DatabasePool

    public static let fileName = "ledger.sqlite3"
    /// How long a write waits for another writer (the operator's `sqlite3` shell) by default.
    public static let defaultBusyTimeoutMilliseconds = 5000

    /// Opens (creating if needed) the ledger in `directory` and brings its schema up to date.
    public init(directory: String, maximumPageCount: Int? = nil) throws(LedgerError) {
        path = "\(directory)/\(Self.fileName)"
        self.directory = directory
        self.maximumPageCount = maximumPageCount
        var configuration = Configuration()
        configuration.busyMode = .timeout(Double(Self.defaultBusyTimeoutMilliseconds) / 1000)
        configuration.label = "ledger"
        configuration.prepareDatabase { db in
            if let maximumPageCount { try db.execute(sql: "PRAGMA max_page_count = \(maximumPageCount)") }
        }
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            // One opener at a time brings the schema up to date. GRDB's migrator reads which
            // migrations are missing outside their transactions, so a second process opening a
            // fresh ledger at once (a test's reader, the crash suite's audit, an operator's
            // tool beside the starting daemon) applied them again and failed ("duplicate column
            // name"), and the daemon did not start. An advisory lock on the directory, not the
            // database file: closing any descriptor of that file would drop SQLite's own locks.
            let lock = try DirectoryLock(directory)
            defer { lock.release() }
            pool = try DatabasePool(path: path, configuration: configuration)
            // After the pool, not in prepareDatabase: DatabasePool.init switches the writer to
            // WAL and then sets `synchronous = NORMAL` on it, which would undo a pragma set
            // earlier. NORMAL syncs the WAL only at checkpoints, so a power cut rolls back every
            // commit since the last one, coins the mech already stored among them. FULL syncs
            // the WAL at every commit, before `append` returns and so before any answer.
            try pool.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA synchronous = FULL") }
            try LedgerSchema.migrator.migrate(pool)
        } catch {
            throw .open(path: path, message: Self.message(error))
        }
    }

    /// Records `entries` in one transaction and returns what each came to, with the recorded
    /// events and their `seq`. A write waits at most `busyTimeoutMilliseconds` for another
    /// writer (the deciding loop passes what is left of the mech's deadline).
    ///
    /// A decision for a coin already recorded is not an error: it comes back as `.duplicate`
    /// with the verdict on record, and the rest of the batch is recorded.
    ///
    /// `synced: false` commits without waiting for the disk (`synchronous = NORMAL` for this
    /// one transaction): for decisions already durable in the decision journal. The next synced
    /// commit makes it durable too (syncing the WAL syncs every frame before it); a power cut
    /// before that may roll it back, and the journal's replay puts it back — with `time`, the
    /// time the journal wrote with them, so that what was published is what the replay records.
    /// Every synced commit sets `synchronous = FULL` first, whatever an unsynced one left.
    @discardableResult
    public func append(_ entries: [LedgerEntry], busyTimeoutMilliseconds: Int = Ledger.defaultBusyTimeoutMilliseconds,
                       synced: Bool = true, time: Double? = nil) throws(LedgerError) -> AppendResult {
        guard !entries.isEmpty else { return AppendResult(outcomes: [], events: []) }
        return try transact(entries, busyTimeoutMilliseconds: busyTimeoutMilliseconds, synced: synced, time: time, first: nil)
    }

    /// `append`, with `first` run at the start of the same transaction: what it throws rolls
    /// the whole transaction back and is rethrown as is when it is a `LedgerPrecondition`.
    func transact(_ entries: [LedgerEntry], busyTimeoutMilliseconds: Int, synced: Bool = true, time: Double? = nil,
                  first: ((Database) throws -> Void)?) throws(LedgerError) -> AppendResult {
        let now = time ?? Date().timeIntervalSince1970
        do {
            return try pool.writeWithoutTransaction { db in
                // The C call, not a PRAGMA: a statement text that changes with every coin would be
                // compiled for every coin.
                sqlite3_busy_timeout(db.sqliteConnection, Int32(clamping: max(0, busyTimeoutMilliseconds)))
                // Cached statements, not `sqlite3_exec`, which compiled each pragma again for
                // every journalled coin (`coinmech-bench e2e --callgrind`).
                // Every synced commit asserts FULL itself: an unsynced commit whose restore of FULL
                // failed (below) must not leave the next ones unsynced. One that cannot set it
                // fails, and the ledger is reported failing.
                try db.cachedStatement(sql: synced ? "PRAGMA synchronous = FULL" : "PRAGMA synchronous = NORMAL").execute()
                var result = AppendResult(outcomes: [], events: [])
                let outcome = Result { () throws -> Void in
                    try db.inTransaction(.immediate) {
                        try first?(db)
                        var writer = LedgerWriter(db: db, time: now)
                        result.outcomes = try entries.map { try writer.record($0) }
                        result.events = result.outcomes.flatMap { outcome -> [LedgerEvent] in
                            if case .recorded(let events) = outcome { return events }
                            return []
                        }
                        return .commit
                    }
                }
                // Back to FULL whatever happened: every other commit is synced. If that fails,
                // so does this append (fail closed: its caller records again; a decision
                // already on the ledger is a duplicate), and the next synced commit sets it again.
                if !synced { try db.cachedStatement(sql: "PRAGMA synchronous = FULL").execute() }
                try outcome.get()
                return result
            }
        } catch let error as LedgerPrecondition {
            throw .precondition(error.message)
        } catch let error as DatabaseError where error.resultCode == .SQLITE_FULL {
            throw .full(message: Self.message(error))
        } catch let error as DatabaseError where error.resultCode == .SQLITE_BUSY || error.resultCode == .SQLITE_LOCKED {
            throw .busy(message: Self.message(error))
        } catch {
            throw .write(message: Self.message(error))
        }
    }

    /// Pages the ledger can still take before its size limit, free pages inside it counted;
    /// nil without a limit. One that cannot be read counts as none (fail closed).
    public func pagesLeft() -> Int? {
        guard let maximumPageCount else { return nil }
        let used = try? pool.writeWithoutTransaction { db in
            try Int.fetchOne(db, sql: "SELECT (SELECT page_count FROM pragma_page_count()) - (SELECT freelist_count FROM pragma_freelist_count())")
        }
        return (used ?? nil).map { maximumPageCount - $0 } ?? 0
    }

    /// The writer connection's `PRAGMA synchronous` (0 OFF, 1 NORMAL, 2 FULL, 3 EXTRA): what
    /// every commit of `append` runs under.
    public func writerSynchronous() throws(LedgerError) -> Int {
        do {
            return try pool.writeWithoutTransaction { db in try Int.fetchOne(db, sql: "PRAGMA synchronous") ?? -1 }
        } catch {
            throw .read(message: Self.message(error))
        }
    }

    func read<T>(_ body: (Database) throws -> T) throws(LedgerError) -> T {
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
