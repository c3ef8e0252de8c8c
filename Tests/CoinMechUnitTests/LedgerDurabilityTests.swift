import CoinMechLedger
import CoinMechModel
@testable import CoinMechTestSupport
import GRDB
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
        let decision = LedgerEntry.decision(DecisionRecord(source: "serial", epoch: 1, deviceSeq: 1, diameterMM: 24.26, weightG: 5.67, thicknessMM: nil, channel: nil,
                                                           verdict: .accept(currency: "USD", code: "quarter", valueMinor: 25), link: "usd", chainGeneration: 1),
                                            credit: .onConfirmation)
        try ledger.append([decision], synced: false)
        #expect(try ledger.writerSynchronous() == 2)
        var configuration = Configuration()
        configuration.allowsUnsafeTransactions = true
        let other = try DatabaseQueue(path: "\(directory)/\(Ledger.fileName)", configuration: configuration)
        try other.inDatabase { try $0.execute(sql: "BEGIN IMMEDIATE") }
        #expect(throws: LedgerError.self) { try ledger.append([.note(.inhibit(source: "serial", on: true, by: "root"))], busyTimeoutMilliseconds: 20, synced: false) }
        try other.inDatabase { try $0.execute(sql: "ROLLBACK") }
        #expect(try ledger.writerSynchronous() == 2)
        #expect(try ledger.events(since: 0).map(\.kind) == ["decision"])
    }
}
