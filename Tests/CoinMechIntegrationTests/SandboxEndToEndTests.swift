import CoinMechHarness
import CoinMechClient
import CoinMechProtocol
@testable import CoinMechTestSupport
import Foundation
import Testing

/// A hostile third-party plugin, built only against the public header, run isolated by a real
/// daemon against coinsim. Before the sandbox, its host opened the daemon's ledger for writing,
/// connected to the control socket and wrote /tmp: isolation contained crashes, not intent.
@Suite("A hostile plugin in its sandbox: every escape refused, or fatal to its host alone and on record", .serialized)
struct SandboxEndToEndTests {
    /// The hostile fixture (with `early` tries compiled into its constructor and entry) and the
    /// shipped plugins of its chain.
    static func plugins(early: String = "") throws -> String {
        let dir = TestSupport.temporaryDirectory("sandbox-plugins")
        _ = try TestSupport.compileFixture("hostile", into: dir, as: "libhostile.so", defines: early.isEmpty ? [] : ["HOSTILE_EARLY=\"\(early)\""])
        for plugin in ["sanity", "coin-table"] { try TestSupport.copyBuiltPlugin(plugin, into: dir) }
        return dir
    }

    /// sanity → the hostile link (isolated, its sandbox required) → coin-table USD; the link
    /// is told where the daemon's ledger, configuration and socket are.
    static func harness(tries: String, createTries: String = "", source: String = "{kind: serial, device: mech, baud: 9600}") throws -> DaemonHarness {
        let harness = try DaemonHarness(source: source)
        let data = "\(harness.dir)/calibration.json"
        try "{}".write(toFile: data, atomically: true, encoding: .utf8)
        let config = "{tries: \"\(tries)\", create_tries: \"\(createTries)\", ledger: \"\(harness.dir)/state/ledger.sqlite3\", config: \"\(harness.config)\", socket: \"\(harness.socket)\", port: 9, alloc_mb: 1024, data: \"\(data)\"}"
        let chain = """
            chain:
              - plugin: sanity
              - {name: third-party, plugin: hostile, isolation: process, sandbox: required, memory_mb: 256, readable: ["\(data)"], config: \(config)}
              - {name: usd, plugin: coin-table, config: {currency: USD}}
            """
        try String(contentsOfFile: harness.config, encoding: .utf8).replacingOccurrences(of: DaemonHarness.defaultChain, with: chain)
            .write(toFile: harness.config, atomically: true, encoding: .utf8)
        return harness
    }

    @Test("opening the ledger (to write or read), the configuration or a file in /tmp, and allocating past its limit are refused; a file the link lists as readable is read; the link decides on")
    func refusedEscapes() throws {
        // The mech waits 2 s: what this asks is what the sandbox refuses, not whether a host
        // just started answers within 50 ms (a late quarter is returned, and the value below
        // would be short).
        let harness = try Self.harness(tries: "ledger_write,ledger_read,config,tmp,memory,data", source: IsolationEndToEndTests.relaxedSource)
        try harness.startSimulator(IsolationEndToEndTests.quarters(6, deadline: IsolationEndToEndTests.relaxed))
        try harness.startDaemon(pluginDirectory: try Self.plugins())
        let client = try IsolationEndToEndTests.connect(harness)
        let truth = try harness.simulatorTruth()
        let chain = try ChildProcess("coinctl", ["chain", "--socket", harness.socket])
        #expect(chain.wait() == 0)
        let shown = String(decoding: chain.readToEnd(), as: UTF8.self)
        let status = try client.request("status")
        #expect(try harness.stopDaemon() == 0, "\(harness.daemonLog)")

        let log = harness.daemonLog
        for (attempt, why) in [("ledger_write", "Permission denied"), ("ledger_read", "Permission denied"), ("config", "Permission denied"),
                               ("tmp", "Permission denied"), ("memory", "Cannot allocate memory")] {
            #expect(log.contains("hostile: \(attempt) refused: \(why)"), "\(attempt): \(log)")
        }
        // The one file its link lists as readable, and nothing else.
        #expect(log.contains("hostile: data SUCCEEDED"), "\(log)")
        #expect(log.components(separatedBy: "SUCCEEDED").count == 2, "\(log)")
        #expect(IsolationEndToEndTests.linkProblem(status, "third-party") == nil)
        #expect(shown.contains("sandbox (required, 256 MiB): landlock v"), "\(shown)")
        #expect(shown.contains("seccomp, limits"), "\(shown)")
        // The first quarter was returned by the hostile link (its escapes refused); the other
        // five were decided by the chain and credited as the mech stored them.
        #expect(try harness.decisions().first?.reason == "escape_refused")
        #expect(truth.storedValue == ["USD": 125])
        try IsolationEndToEndTests.expectNothingWrongCredited(harness)
    }

    @Test("a forbidden system call ends only the plugin host; the link is quarantined at once, naming the call, and the daemon decides on", arguments: [
        ("control_socket", "socket"), ("tcp", "socket"), ("exec", "execve"), ("fork", "clone"), ("ptrace", "ptrace"), ("kill", "kill"),
        ("setown", "fcntl"),
    ])
    func fatalEscapes(attempt: String, call: String) throws {
        let harness = try Self.harness(tries: attempt)
        try harness.startSimulator(IsolationEndToEndTests.quarters(8))
        try harness.startDaemon(pluginDirectory: try Self.plugins())
        let client = try IsolationEndToEndTests.connect(harness)
        try TestSupport.waitUntil("the violation to quarantine the link", timeout: 60) {
            IsolationEndToEndTests.linkProblem(try client.request("status"), "third-party")?["state"] == "quarantined"
        }
        let truth = try harness.simulatorTruth()
        let status = try client.request("status")
        #expect(harness.daemon!.isRunning, "\(harness.daemonLog)")
        #expect(try harness.stopDaemon() == 0, "\(harness.daemonLog)")

        let problem = try #require(IsolationEndToEndTests.linkProblem(status, "third-party"))
        #expect(problem["cause"] == "sandbox_violation")
        #expect(problem["reason"]?.string?.hasPrefix("its plugin made a system call its sandbox forbids (\(call)): quarantined at once") == true, "\(problem)")
        #expect(!harness.daemonLog.contains("hostile: \(attempt) "), "the attempt returned: \(harness.daemonLog)")
        // The reading in flight was returned, naming the call; nothing else was decided by it.
        let decisions = try harness.decisions()
        let stopped = decisions.filter { $0.reason == "sandbox_violation" }
        #expect(stopped.count == 1)
        #expect(stopped.first?.message == "link 'third-party' was stopped: its plugin made a system call its sandbox forbids (\(call)); coin returned")
        let events = try harness.ledger().events(since: 0, limit: 100_000)
        let quarantined = try #require(events.first { $0.kind == "quarantined" }?.detail.flatMap(JSON.parse))
        #expect(quarantined["link"] == "third-party" && quarantined["cause"] == "sandbox_violation", "\(quarantined)")
        #expect(truth.outcomes.inhibited > 0, "the mech returned the rest by itself once inhibited")
        try IsolationEndToEndTests.expectNothingWrongCredited(harness)
    }

    @Test("an escape tried while the daemon loads the plugin (its constructor, its entry, create): only its host ends; the link is quarantined at start naming the call, and the daemon starts and decides on",
          arguments: [("constructor:fork", "", "clone"), ("entry:setown", "", "fcntl"), ("", "tcp", "socket")])
    func escapeWhileLoading(early: String, createTries: String, call: String) throws {
        let harness = try Self.harness(tries: "", createTries: createTries)
        try harness.startSimulator(IsolationEndToEndTests.quarters(6))
        try harness.startDaemon(pluginDirectory: try Self.plugins(early: early))
        let client = try IsolationEndToEndTests.connect(harness)
        let truth = try harness.simulatorTruth()
        let status = try client.request("status")
        #expect(harness.daemon!.isRunning, "\(harness.daemonLog)")
        #expect(try harness.stopDaemon() == 0, "\(harness.daemonLog)")

        let problem = try #require(IsolationEndToEndTests.linkProblem(status, "third-party"), "\(status)")
        #expect(problem["cause"] == "sandbox_violation")
        #expect(problem["reason"]?.string?.hasPrefix("its plugin made a system call its sandbox forbids (\(call)) while loading") == true, "\(problem)")
        #expect(!harness.daemonLog.contains("SUCCEEDED"), "\(harness.daemonLog)")
        // Quarantined before a coin came: the mech was inhibited and returned every one itself.
        #expect(truth.storedValue.isEmpty && truth.outcomes.inhibited > 0, "\(truth.outcomes)")
        try IsolationEndToEndTests.expectNothingWrongCredited(harness)
    }
}
