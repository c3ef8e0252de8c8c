@testable import CoinMechLedger
import CoinMechModel
@testable import CoinMechTestSupport
import Testing

/// What a commit of the ledger waits for: the disk, not only the page cache.
@Suite("Ledger durability: every commit is synced")
struct LedgerDurabilityTests {
    // GRDB's DatabasePool sets `synchronous = NORMAL` on its writer when it turns WAL on,
    // after the connection's own set-up ran: a pragma set there was silently undone, and no
    // commit reached the disk before the mech was told to keep the coin.
    @Test("the writer connection that records coins commits with synchronous FULL or EXTRA")
    func writerIsSynchronousFull() throws {
        let ledger = try Ledger(directory: TestSupport.temporaryDirectory("sync"))
        let level = try ledger.writerSynchronous()
        #expect(level == 2 || level == 3, "PRAGMA synchronous on the writer is \(level) (0 OFF, 1 NORMAL, 2 FULL, 3 EXTRA)")
    }

    @Test("a ledger reopened on an existing file commits with synchronous FULL or EXTRA too")
    func reopenedWriterIsSynchronousFull() throws {
        let directory = TestSupport.temporaryDirectory("sync-reopen")
        _ = try Ledger(directory: directory)
        let level = try Ledger(directory: directory).writerSynchronous()
        #expect(level == 2 || level == 3, "PRAGMA synchronous on the reopened writer is \(level)")
    }

    // A journalled batch commits with NORMAL for that one transaction; every other commit must
    // find FULL again, also after one that failed (another writer held the lock).
    @Test("after an unsynced commit, and after one that failed, the writer is back to synchronous FULL")
    func unsyncedCommitRestoresFull() throws {
        let directory = TestSupport.temporaryDirectory("sync-unsynced")
        let ledger = try Ledger(directory: directory)
        try ledger.append([LedgerFixtures.quarter(1)], synced: false)
        #expect(try ledger.writerSynchronous() == 2)
        let other = try LedgerFixtures.holdWriteLock(directory: directory)
        #expect(throws: LedgerError.self) { try ledger.append([.note(.inhibit(source: "serial", on: true, by: "root"))], busyTimeoutMilliseconds: 20, synced: false) }
        try other.inDatabase { try $0.execute(sql: "ROLLBACK") }
        #expect(try ledger.writerSynchronous() == 2)
        #expect(try ledger.events(since: 0).map(\.kind) == ["decision"])
    }

    // An unsynced commit sets NORMAL for itself and FULL again after; if that restore fails, the
    // append fails, and the connection stayed at NORMAL: every later commit went unsynced.
    @Test("a synced commit after an unsynced one whose restore of FULL failed is synced again: it sets FULL itself")
    func failedRestoreIsRetried() throws {
        let directory = TestSupport.temporaryDirectory("sync-restore")
        let ledger = try Ledger(directory: directory)
        try ledger.append([LedgerFixtures.quarter(1)], synced: false)
        // What a failed restore leaves: the writer at NORMAL.
        try ledger.pool.writeWithoutTransaction { try $0.execute(sql: "PRAGMA synchronous = NORMAL") }
        try ledger.append([LedgerFixtures.quarter(2)])
        #expect(try ledger.writerSynchronous() == 2, "the synced commit ran at FULL")
        #expect(try ledger.events(since: 0).count == 2)
    }
}
