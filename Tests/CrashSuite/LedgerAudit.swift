import ArgumentParser
import CoinMechAudit
import CoinMechLedger
import CoinSimCore
import Foundation

/// `coinmech-crash audit`: one ledger judged against coinsim's ground truth, for runs that
/// happen elsewhere (the power cuts of `make test-vm`, where the daemon runs in a VM and the
/// mech on the host). The ledger is copied out of wherever it lived; its directory holds
/// `ledger.sqlite3` and, after an unclean stop, its `-wal`.
struct LedgerAudit: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "audit",
        abstract: "Join coinsim's ground truth with a ledger, coin by coin: lost, doubled, phantom, unconfirmed, pending.",
        discussion: """
            Prints one line per unconfirmed coin and per problem, then
            {"coins": C, "stored": S, "credited": N, "lost": 0, "doubled": 0, "phantom": 0, "unconfirmed": U, "pending": 0}.
            Exit status: 0 the money is right; 1 it is not; 2 the files could not be read.
            """)

    @Option(help: "The directory holding ledger.sqlite3 (the daemon's state_dir).")
    var ledger: String
    @Option(help: "coinsim's ground truth (JSON); repeat for several sessions, in order.")
    var truth: [String]
    @Option(help: "The ledger's source name.")
    var source = "serial"

    func run() throws {
        let audit: MoneyAudit
        do {
            let decoder = JSONDecoder()
            decoder.keyDecodingStrategy = .convertFromSnakeCase
            let truths = try truth.map { try decoder.decode(GroundTruth.self, from: Data(contentsOf: URL(fileURLWithPath: $0))) }
            let book = try Ledger(directory: ledger)
            audit = MoneyAudit(truths: truths, events: try book.events(since: 0, limit: 100_000_000), boots: try book.boots(source: source))
        } catch {
            FileHandle.standardError.write(Data("coinmech-crash audit: \(error)\n".utf8))
            throw ExitCode(2)
        }
        for (key, explanation) in audit.unconfirmed {
            print("unconfirmed: \(key): \(explanation ?? "NO CAUSE IN THE TRUTH")")
        }
        if !audit.isClean { print(audit.problems) }
        let credited = audit.credited.values.reduce(0, +)
        print("{\"coins\": \(audit.coins), \"stored\": \(audit.stored.count), \"credited\": \(credited), \"lost\": \(audit.lost.count), "
            + "\"doubled\": \(audit.doubled.count), \"phantom\": \(audit.phantom.count), \"unconfirmed\": \(audit.unconfirmed.count), "
            + "\"pending\": \(audit.pending.count)}")
        if !audit.isClean { throw ExitCode(1) }
    }
}
