import CoinMechLedger
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
}
