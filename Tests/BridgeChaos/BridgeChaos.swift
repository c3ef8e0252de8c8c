import ArgumentParser
import CoinMechHarness
import CoinSimCore
import Foundation

/// `make test-bridge`: coinsim, coinmechd, coinmech-bridge and a real mosquitto, with a
/// subscriber that stores events by (cabinet, seq) and acks what it stored, as the fleet does,
/// through kill -9 of the bridge, kill -9 of the broker, the broker down for a while, the
/// daemon restarted, the broker's sessions cleared and the subscriber killed. Then the store is
/// compared with the ledger, seq by seq. The last line is the verdict as JSON; exit 0 only when
/// nothing was lost, doubled after dedupe or out of order.
@main
struct BridgeChaos: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "coinmech-bridge-chaos",
        abstract: "Prove every ledger event reaches a fleet consumer once, through crashes of the bridge, the broker, the daemon and the consumer.",
        discussion: """
            Prints one line per fault, then
            {"seed":N,"bridge_kills":…,"broker_kills":…,"broker_down_s":…,"daemon_restarts":…,"sessions_cleared":…,"subscriber_kills":…,
             "events":…,"copies":…,"lost":0,"duplicated_after_dedupe":0,"out_of_order":0,"phantom":0}.
            Exit status: 0 every event once and in order; 1 not (the lines above say which seqs); 2 the run could not be made.
            """)

    @Option(help: "Directory of the coinmechd, coinsim, coinmech-bridge and plugin builds (default: this executable's).")
    var bin: String?
    @Option(help: "SIGKILLs of the bridge at random moments, each followed by a new bridge at once.")
    var bridgeKills = 20
    @Option(help: "SIGKILLs of the broker at random moments, each followed by a restart at once.")
    var brokerKills = 5
    @Option(help: "Seconds the broker stays down once, coins still coming.")
    var brokerDown = 30.0
    @Option(help: "SIGKILLs of the subscriber, each followed by one with the same persistent session.")
    var subscriberKills = 5
    @Option(help: "Seed of the random moments (default: a new one, printed).")
    var seed: UInt64?
    @Flag(help: "Run the bridge with delivery.acks off (the cursor follows the broker's PUBACK): the broker's crashes lose events, and the run must say so.")
    var acksOff = false
    @Flag(help: "Keep the scratch directory (ledger, logs, broker) and print its path.")
    var keep = false
    @Option(help: "The tests' CA (make test-ca): the broker speaks TLS with a certificate it signed, as shipped; none: plaintext.")
    var ca = ".build/test-ca"

    func run() throws {
        let seed = seed ?? UInt64.random(in: 1...999_999)
        let repeatIt = "coinmech-bridge-chaos --seed \(seed) --bridge-kills \(bridgeKills) --broker-kills \(brokerKills) --broker-down \(brokerDown) --subscriber-kills \(subscriberKills)\(acksOff ? " --acks-off" : "")"
        print("coinmech-bridge-chaos: seed \(seed) (\(repeatIt) repeats this run)")
        do {
            let exe = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
            let chaos = try ChaosRun(bin: bin ?? (exe as NSString).deletingLastPathComponent, seed: seed)
            let tls: TestCA?
            do { tls = ca == "none" ? nil : try TestCA(dir: ca) } catch { throw ChaosError("\(error)") }
            var verdict = try chaos.play(bridgeKills: bridgeKills, brokerKills: brokerKills, brokerDown: brokerDown, subscriberKills: subscriberKills, acksOff: acksOff, tls: tls)
            verdict.seed = seed
            if keep { print("kept: \(chaos.dir)") } else { try? FileManager.default.removeItem(atPath: chaos.dir) }
            if !verdict.isClean { print("an event was lost, doubled or out of order; repeat the run with: \(repeatIt) --keep") }
            print(verdict.json)
            if !verdict.isClean { throw ExitCode(1) }
        } catch let error as ChaosError {
            FileHandle.standardError.write(Data("coinmech-bridge-chaos: \(error)\n".utf8))
            throw ExitCode(2)
        }
    }
}
