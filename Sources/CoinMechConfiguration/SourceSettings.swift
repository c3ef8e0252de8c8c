import CoinMechChain
import CoinMechCore
import CoinMechDrivers
import CoinMechModel
import CoinMechSettings
import Foundation

extension SourceConfiguration {
    /// The `source` table's keys every kind has; each driver adds its own.
    static let sharedKeys = ["kind", "name", "deadline_ms", "commit_allowance_ms", "currencies", "tokens", "standing_credit"]

    /// Reads the `source` table of `table`: its kind's driver reads its part, then the cabinet's
    /// coins and the answer deadline.
    static func parse(_ table: SettingsTable, resolve: (String) -> String) throws(SettingsError) -> SourceConfiguration {
        guard let sourceTable = try table.table("source") else { throw table.error("missing table 'source' (kind, device, baud)") }
        try sourceTable.rejectUnknownKeys(Set(sharedKeys + MechDrivers.table.flatMap { $0.keys }))
        let kindName = try sourceTable.string("kind") ?? SerialDriver.kind
        let name = try sourceTable.string("name") ?? kindName
        guard !name.isEmpty, name.utf8.count <= SourceName.capacity else {
            throw sourceTable.error("name", "must be 1 to \(SourceName.capacity) bytes, got \(name.utf8.count)")
        }
        guard let driver = MechDrivers.driver(kind: kindName) else {
            throw sourceTable.error("kind", "unknown source kind '\(kindName)' (known: \(MechDrivers.kinds.joined(separator: ", ")))")
        }
        // Each driver lists only its own keys: one another kind reads is refused here, naming
        // the kinds it is for (a serial mech's `confirmations` on a GPIO mech, a ccTalk bus's
        // `hoppers` on a changer).
        for key in sourceTable.keys.sorted() where !sharedKeys.contains(key) && !driver.keys.contains(key) {
            let owners = MechDrivers.table.filter { $0.keys.contains(key) }.map { $0.kind }
            throw sourceTable.error(key, "applies to \(owners.joined(separator: " and ")) sources only")
        }
        let mech = try driver.parse(sourceTable, resolve: resolve)
        var source = SourceConfiguration(name: name, kind: kindName, mech: mech)
        (source.coins, source.currenciesConfigured) = try CabinetCoinsSettings.parse(sourceTable)
        source.standingCredit = try StandingCreditSettings.parse(sourceTable)
        // A kind whose mech returns a coin it hears nothing about in time has a default deadline
        // (serial: 50 ms); the others have one only when it is configured.
        if let deadline = try sourceTable.double("deadline_ms") ?? driver.defaultDeadlineMilliseconds {
            guard (5...60_000).contains(deadline) else { throw sourceTable.error("deadline_ms", "must be between 5 and 60000") }
            let allowance = try sourceTable.double("commit_allowance_ms") ?? min(10, deadline / 2)
            guard allowance >= 0, allowance < deadline else {
                throw sourceTable.error("commit_allowance_ms", "must be at least 0 and below deadline_ms (\(deadline))")
            }
            if let line = mech.lineTiming {
                // An answer's bytes take time on the line, and the deadline covers them too.
                // (An answer with a six-digit device sequence number.)
                let transit = line.answerTransit(deviceSeq: 123_456).milliseconds
                guard allowance + transit < deadline else {
                    throw sourceTable.error("deadline_ms", "at \(line.baud) baud an answer takes \(String(format: "%.0f", transit)) ms on the line, which with commit_allowance_ms \(String(format: "%g", allowance)) leaves no time to decide within \(String(format: "%g", deadline)) ms; set deadline_ms to how long your mech waits")
                }
            }
            source.answerDeadline = AnswerDeadline(deadlineMilliseconds: deadline, commitAllowanceMilliseconds: allowance)
        } else if try sourceTable.double("commit_allowance_ms") != nil {
            throw sourceTable.error("commit_allowance_ms", "needs deadline_ms: this source kind has no answer deadline unless one is set")
        }
        return source
    }
}
