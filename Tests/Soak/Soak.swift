import ArgumentParser
import Foundation

/// `make soak`: a million coins through a real coinmechd at the highest rate the protocol
/// allows (coinsim in lockstep), with reloads, subscribers coming and going, a control client,
/// a kiosk selling from the customer's credit, a bridge to a real mosquitto, and the daemon
/// killed and started again every 50,000 coins.
/// Every 100,000 coins it prints the daemon's RSS, descriptors, threads, the ledger's and the
/// WAL's size and the mech's answer p99; at the end coinsim's truth is joined with the ledger.
/// The last line is the verdict as JSON; exit 0 only when nothing was lost, doubled or credited
/// wrongly, every sale moved the credit once and nothing kept growing after the warm-up.
@main
struct Soak: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "coinmech-soak",
        abstract: "Run coinmechd through a million coins with reloads, clients, sales, a bridge and kills; prove it neither drifts nor loses money.",
        discussion: """
            Prints a line per sample, then {"coins": N, "lost": 0, "doubled": 0, "phantom": 0, "rss_growth_kib": …, "fd_growth": …, …, "flat": true}.
            Exit status: 0 the money is right and the figures level off; 1 not (the lines above say which); 2 the run could not be made.
            """)

    @Option(help: "Directory of the coinmechd, coinsim, coinmech-bridge and plugin builds (default: this executable's).")
    var bin: String?
    @Option(help: "Coins to insert.")
    var coins = 1_000_000
    @Option(help: "The daemon is killed (SIGKILL) and started again after every this many coins.")
    var restartEvery = 50_000
    @Option(help: "The figures are sampled after every this many coins (a multiple of --restart-every: just before that restart).")
    var sampleEvery = 100_000
    @Option(help: "A reload (SIGHUP) after every this many coins.")
    var reloadEvery = 10_000
    @Option(help: "Seed of the scenario (default: a new one, printed).")
    var seed: UInt64?
    @Flag(help: "Keep the scratch directory (ledger, logs, truth) and print its path.")
    var keep = false

    func validate() throws {
        guard coins > 0, restartEvery > 0, sampleEvery >= restartEvery, sampleEvery % restartEvery == 0 else {
            throw ValidationError("--sample-every must be a positive multiple of --restart-every")
        }
    }

    func run() throws {
        let seed = seed ?? UInt64.random(in: 1...999_999)
        let repeatIt = "coinmech-soak --seed \(seed) --coins \(coins) --restart-every \(restartEvery) --sample-every \(sampleEvery)"
        print("coinmech-soak: seed \(seed) (\(repeatIt) repeats this run)")
        do {
            let exe = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
            let soak = try SoakRun(bin: bin ?? (exe as NSString).deletingLastPathComponent, seed: seed, coins: coins)
            let verdict = try soak.play(restartEvery: restartEvery, sampleEvery: sampleEvery, reloadEvery: reloadEvery)
            if keep { print("kept: \(soak.dir)") } else { try? FileManager.default.removeItem(atPath: soak.dir) }
            if !verdict.isClean { print("the soak failed; repeat it with: \(repeatIt) --keep") }
            print(verdict.json)
            if !verdict.isClean { throw ExitCode(1) }
        } catch let error as SoakError {
            FileHandle.standardError.write(Data("coinmech-soak: \(error)\n".utf8))
            throw ExitCode(2)
        }
    }
}

struct SoakError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
