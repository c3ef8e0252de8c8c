import CoinMechAudit
import CoinMechHarness
import CoinMechLedger
import CoinMechModel
@testable import CoinMechTestSupport
import CoinSimCore
import Foundation
import Testing

/// A scratch directory with a configuration, a real `coinsim` and a real `coinmechd`.
final class DaemonHarness {
    let dir: String
    var config: String { "\(dir)/coinmechd.yaml" }
    private(set) var simulator: ChildProcess?
    private(set) var daemon: ChildProcess?
    private var truthCount = 0
    /// Every simulator session's ground truth so far, in order.
    private(set) var truths: [GroundTruth] = []

    static let defaultChain = FixtureChains.usd

    init(chain: String = DaemonHarness.defaultChain, extra: String = "", source: String = "{kind: serial, device: mech, baud: 9600}") throws {
        dir = TestSupport.temporaryDirectory("daemon")
        try """
            log_level: debug
            source: \(source)
            state_dir: state
            runtime_dir: run
            cache_dir: cache
            \(extra)
            \(chain)
            """.write(toFile: config, atomically: true, encoding: .utf8)
    }

    /// coinmech-bridge's configuration for this daemon: cabinet c-0042 of test-site, its state
    /// in `<dir>/bridge`; `mqtt` and `more` are its own lines (flow-style YAML). Returns the
    /// bridge's arguments.
    func bridgeConfiguration(mqtt: String, _ more: String...) throws -> [String] {
        let lines = ["cabinet: c-0042", "site: test-site", "socket: {path: \(dir)/run/coinmechd.sock}", "state_dir: \(dir)/bridge", "mqtt: \(mqtt)"] + more
        try lines.joined(separator: "\n").write(toFile: "\(dir)/bridge.yaml", atomically: true, encoding: .utf8)
        return ["--config", "\(dir)/bridge.yaml"]
    }

    /// Starts coinsim with `scenario` (YAML text) linked at `<dir>/mech`.
    func startSimulator(_ scenario: String, arguments: [String] = []) throws {
        truthCount += 1
        try scenario.write(toFile: "\(dir)/scenario.yaml", atomically: true, encoding: .utf8)
        let sim = try ChildProcess("coinsim", ["--scenario", "\(dir)/scenario.yaml", "--link", "\(dir)/mech",
                                               "--truth", "\(dir)/truth\(truthCount).json", "--host-timeout", "20"] + arguments)
        _ = try #require(sim.readLine(), "coinsim printed no device: \(sim.stderr)")
        simulator = sim
    }

    /// Starts coinmechd; `pluginDirectory` nil leaves the configuration's `plugin_dir` in force.
    /// `wrapper` runs the daemon under another program (`["/usr/bin/strace", …]`).
    func startDaemon(_ arguments: [String] = [], pluginDirectory: String? = TestSupport.binDirectory, environment: [String: String] = [:],
                     wrapper: [String] = []) throws {
        let plugins = pluginDirectory.map { ["--plugin-dir", $0] } ?? []
        let command = ["--config", config] + plugins + arguments
        if let program = wrapper.first {
            daemon = try ChildProcess(program, Array(wrapper.dropFirst()) + ["\(TestSupport.binDirectory)/coinmechd"] + command,
                                      environment: environment, absolute: true)
        } else {
            daemon = try ChildProcess("coinmechd", command, environment: environment)
        }
    }

    /// Waits for the simulator to finish its scenario and returns its ground truth.
    func simulatorTruth(timeout: Double = 60) throws -> GroundTruth {
        let sim = try #require(simulator)
        #expect(sim.wait(timeout: timeout) == 0, "coinsim: \(sim.stderr)")
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        let truth = try decoder.decode(GroundTruth.self, from: Data(contentsOf: URL(fileURLWithPath: "\(dir)/truth\(truthCount).json")))
        truths.append(truth)
        return truth
    }

    /// Every simulator session's truth joined with the ledger: lost, doubled, phantom, unconfirmed.
    func audit() throws -> MoneyAudit {
        let ledger = try ledger()
        return MoneyAudit(truths: truths, events: try ledger.events(since: 0, limit: 10_000_000), boots: try ledger.boots(source: "serial"))
    }

    /// Ends the simulator's session early (it still writes its ground truth).
    func stopSimulator() throws {
        try #require(simulator).signal(SIGTERM)
    }

    /// Sends `signal` to the daemon and returns its exit status.
    @discardableResult
    func stopDaemon(_ signal: Int32 = SIGTERM) throws -> Int32? {
        let daemon = try #require(daemon)
        daemon.signal(signal)
        return daemon.wait(timeout: 20)
    }

    func ledger() throws -> Ledger { try Ledger(directory: "\(dir)/state") }

    /// Every decision in the ledger.
    func decisions() throws -> [LedgerEvent] { try ledger().events(since: 0, limit: 1_000_000).filter { $0.kind == "decision" } }

    /// Accepted coins as (epoch index, devseq): epochs numbered 0, 1, … in the order they appear,
    /// as the simulator numbers them.
    static func acceptedInLedger(_ decisions: [LedgerEvent], epochOffset: Int = 0) -> Set<CoinKey> {
        let epochs = Array(Set(decisions.compactMap(\.epoch))).sorted()
        return Set(decisions.filter { $0.verdict == "accept" }.map {
            CoinKey(epoch: epochs.firstIndex(of: $0.epoch!)! + epochOffset, devseq: UInt64($0.deviceSeq!))
        })
    }

    static func acceptedInTruth(_ truth: GroundTruth) -> Set<CoinKey> {
        Set(truth.coins.filter { $0.outcome == "accept" }.map { CoinKey(epoch: $0.epoch, devseq: $0.devseq) })
    }

    /// Where the ledger's decisions and the mech disagree: an accept the mech did not hear in
    /// time is fine only if its answer was late and the ledger settled it as returned; every
    /// coin the mech accepted must be an accept on the ledger. Empty when they agree.
    static func disagreements(_ decisions: [LedgerEvent], _ truth: GroundTruth, epochOffset: Int = 0) -> [String] {
        let epochs = Array(Set(decisions.compactMap(\.epoch))).sorted()
        var byKey: [CoinKey: LedgerEvent] = [:]
        for decision in decisions {
            byKey[CoinKey(epoch: epochs.firstIndex(of: decision.epoch!)! + epochOffset, devseq: UInt64(decision.deviceSeq!))] = decision
        }
        var problems: [String] = []
        for coin in truth.coins where coin.devseq > 0 {
            let key = CoinKey(epoch: coin.epoch, devseq: coin.devseq)
            guard let decision = byKey[key] else {
                if coin.outcome == "accept" { problems.append("\(key): accepted by the mech, no decision on the ledger") }
                continue
            }
            switch (coin.outcome, decision.verdict) {
            case ("accept", "accept"), ("return", "reject"), ("deadline_miss", "reject"):
                break
            case ("deadline_miss", "accept") where decision.state == "returned" || decision.state == "pending":
                break  // answered late: the mech returned it, and said so
            default:
                problems.append("\(key): the mech's outcome is \(coin.outcome), the ledger's verdict \(decision.verdict ?? "?") (state \(decision.state ?? "-"))")
            }
        }
        return problems
    }

    /// Credit per currency on the ledger's `coin` events, computed apart from the totals table.
    func creditedValue() throws -> [String: Int64] {
        try ledger().events(since: 0, limit: 10_000_000).filter { $0.kind == "coin" }
            .reduce(into: [:]) { $0[$1.currency!, default: 0] += $1.valueMinor! }
    }

    var daemonLog: String { daemon?.stderr ?? "" }
}

struct CoinKey: Hashable, CustomStringConvertible {
    var epoch: Int
    var devseq: UInt64
    var description: String { "\(epoch)/\(devseq)" }
}
