import CoinMechLedger
import CoinMechModel
import GRDB

/// What the ledger's tests write, and another writer in its way.
enum LedgerFixtures {
    /// A quarter the serial source accepted: pending until the mech's word.
    static func quarter(_ deviceSeq: UInt64, epoch: Int64 = 1) -> LedgerEntry {
        .decision(DecisionRecord(source: "serial", epoch: epoch, deviceSeq: deviceSeq, diameterMM: 24.26, weightG: 5.67, thicknessMM: nil,
                                 channel: nil, verdict: .accept(currency: "USD", code: "quarter", valueMinor: 25), link: "usd", chainGeneration: 1),
                  credit: .onConfirmation)
    }

    /// Another writer (an operator's `sqlite3` shell, say) holding the ledger's write lock in
    /// `directory` until it executes `ROLLBACK`.
    static func holdWriteLock(directory: String) throws -> DatabaseQueue {
        var configuration = Configuration()
        configuration.allowsUnsafeTransactions = true
        let other = try DatabaseQueue(path: "\(directory)/\(Ledger.fileName)", configuration: configuration)
        try other.inDatabase { try $0.execute(sql: "BEGIN IMMEDIATE") }
        return other
    }
}
