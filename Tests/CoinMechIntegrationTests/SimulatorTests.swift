import CoinMechHarness
@testable import CoinMechTestSupport
import CoinSimCore
import Foundation
import Testing

/// Drives a real `coinsim` process over a real pty with a scripted host.
@Suite("coinsim over a pseudo-terminal, checked by its ground truth", .serialized)
struct SimulatorTests {
    struct Run {
        let truth: [String: Any]
        let host: ScriptedHost
        let devicePaths: [String]
    }

    /// Writes `scenario` to a file, runs coinsim with it, drives it with `host`, returns the truth.
    /// Scenarios whose every reading must be answered in time give the mech a 2 s deadline: the
    /// scripted host polls, and a loaded machine must not turn a test of coinsim into one of timing.
    func simulate(_ scenario: String, extra: [String] = [], link: Bool = false, policy: @escaping (UInt64) -> ScriptedHost.Answer = { _ in .accept() }) throws -> Run {
        let dir = TestSupport.temporaryDirectory("sim")
        try scenario.write(toFile: "\(dir)/s.yaml", atomically: true, encoding: .utf8)
        var arguments = ["--scenario", "\(dir)/s.yaml", "--truth", "\(dir)/truth.json", "--linger-ms", "300"] + extra
        if link { arguments += ["--link", "\(dir)/mech"] }
        let sim = try ChildProcess("coinsim", arguments)
        let first = try #require(sim.readLine(), "coinsim printed no device path: \(sim.stderr)")
        #expect(first.hasPrefix("/dev/pts/"))
        let host = ScriptedHost(path: link ? "\(dir)/mech" : first, policy: policy)
        #expect(host.run(timeout: 30) { !sim.isRunning }, "coinsim did not finish its scenario")
        #expect(sim.wait(timeout: 10) == 0, "coinsim failed: \(sim.stderr)")
        let data = try Data(contentsOf: URL(fileURLWithPath: "\(dir)/truth.json"))
        let truth = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        return Run(truth: truth, host: host, devicePaths: [first])
    }

    @Test("answers on time, late and never: misses and late decisions are counted")
    func deadlines() throws {
        let run = try simulate("coins: 12\nrate_per_s: 20\nseed: 1\n") { seq in
            switch seq % 3 {
            case 0: .ignore
            case 1: .accept(delayMs: 120)  // the mech gave up after 50 ms
            default: .reject()
            }
        }
        let outcomes = try #require(run.truth["outcomes"] as? [String: Int])
        #expect(outcomes["deadline_misses"] == 8)
        #expect(outcomes["returned"] == 4)
        #expect(outcomes["accepted"] == 0)
        let coins = try #require(run.truth["coins"] as? [[String: Any]])
        #expect(coins.count == 12)
        #expect(coins.filter { $0["late_decision"] as? String == "A" }.count == 4)
        #expect(coins.filter { ($0["devseq"] as? Int).map { $0 % 3 == 0 } ?? false }.allSatisfy { $0["outcome"] as? String == "deadline_miss" })
        let latency = try #require(run.truth["latency_us"] as? [String: Int])
        #expect(latency["count"] == 8)
        #expect(latency["max"]! >= 120_000)
        #expect(latency["p50"]! <= latency["p99"]! && latency["p99"]! <= latency["max"]!)
    }

    @Test("every reading answered in time: accepted value matches the genuine coins")
    func allAccepted() throws {
        let run = try simulate("coins: 20\nrate_per_s: 25\nseed: 2\nmix: {quarter: 1}\ndeadline_ms: 2000\n")
        let outcomes = try #require(run.truth["outcomes"] as? [String: Int])
        #expect(outcomes["accepted"] == 20)
        #expect((run.truth["accepted_value"] as? [String: Int])?["USD"] == 500)
        #expect((run.truth["creditable_value"] as? [String: Int])?["USD"] == 500)
        #expect(run.host.statuses.first == .powerUp)
        #expect(run.host.readings == Array(1...20))
    }

    @Test("garbage is produced when asked, and the host's parser sees exactly that much")
    func garbage() throws {
        let run = try simulate("coins: 6\nrate_per_s: 20\ndeadline_ms: 2000\nfaults: {garbage: 1, garbage_bytes: 10}\n")
        let faults = try #require(run.truth["faults_injected"] as? [String: Int])
        #expect(faults["garbage_bursts"] == 6)
        #expect(faults["garbage_bytes"] == 60)
        #expect(run.host.parser.errors.garbageBytes == 60)
        #expect((run.truth["outcomes"] as? [String: Int])?["accepted"] == 6)
    }

    @Test("broken sentences reach the host as broken, and those coins are returned")
    func brokenSentences() throws {
        let run = try simulate("coins: 30\nrate_per_s: 30\nseed: 4\ndeadline_ms: 2000\nfaults: {bad_checksum: 0.2, truncated: 0.1, overlong: 0.1}\n")
        let faults = try #require(run.truth["faults_injected"] as? [String: Int])
        let outcomes = try #require(run.truth["outcomes"] as? [String: Int])
        let broken = faults["bad_checksums"]! + faults["truncated"]! + faults["overlong"]!
        #expect(broken > 0)
        #expect(outcomes["corrupted"] == broken)
        #expect(outcomes["accepted"] == 30 - broken)
        #expect(run.host.parser.errors.badChecksums == faults["bad_checksums"])
        #expect(run.host.parser.errors.overlong == faults["overlong"])
    }

    @Test("a disconnect closes the pty; the host sees the hang-up and reconnects through the link")
    func disconnectAndReconnect() throws {
        let run = try simulate("coins: 10\nrate_per_s: 20\ndeadline_ms: 2000\nfaults: {disconnect_at: [5], disconnect_ms: 300}\n", link: true)
        let connections = try #require(run.truth["connections"] as? [String: Any])
        #expect(connections["connects"] as? Int == 2)
        #expect(connections["hangups"] as? Int == 1)
        #expect((connections["device_paths"] as? [String])?.count == 2)
        #expect(run.host.reconnects >= 1)
        #expect((run.truth["faults_injected"] as? [String: Int])?["disconnects"] == 1)
        #expect((run.truth["outcomes"] as? [String: Int])?["accepted"] == 10)
    }

    @Test("a power cycle announces POWERUP and restarts device sequence numbers")
    func powerCycle() throws {
        let run = try simulate("coins: 8\nrate_per_s: 20\ndeadline_ms: 2000\nfaults: {power_cycle_at: [5], jam_at: [3]}\n")
        #expect(run.host.statuses == [.powerUp, .jam, .powerUp])
        #expect(run.host.readings == [1, 2, 3, 4, 1, 2, 3, 4])
        let coins = try #require(run.truth["coins"] as? [[String: Any]])
        #expect(coins.map { $0["epoch"] as? Int } == [0, 0, 0, 0, 1, 1, 1, 1])
        #expect((run.truth["outcomes"] as? [String: Int])?["accepted"] == 8)
    }

    @Test("a recorded session replays the same sentences")
    func recordAndReplay() throws {
        let dir = TestSupport.temporaryDirectory("trace")
        let original = try simulate("coins: 8\nrate_per_s: 25\nseed: 9\ndeadline_ms: 2000\n", extra: ["--record", "\(dir)/trace.jsonl"])
        let entries = try readTrace(path: "\(dir)/trace.jsonl")
        #expect(entries.contains { $0.dir == "rx" })
        let replay = try ChildProcess("coinsim", ["replay", "\(dir)/trace.jsonl", "--truth", "\(dir)/replay.json", "--deadline-ms", "2000"])
        let path = try #require(replay.readLine())
        let host = ScriptedHost(path: path)
        #expect(host.run(timeout: 20) { !replay.isRunning }, "the replay did not finish")
        #expect(replay.wait() == 0, "\(replay.stderr)")
        #expect(host.readings == original.host.readings)
        let truth = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: "\(dir)/replay.json"))) as? [String: Any])
        #expect((truth["outcomes"] as? [String: Int])?["accepted"] == 8)
        #expect((truth["sent"] as? [String: Any])?["readings"] as? Int == 8)
    }

    @Test("SIGTERM ends an endless session and still writes the ground truth")
    func sigterm() throws {
        let dir = TestSupport.temporaryDirectory("term")
        let sim = try ChildProcess("coinsim", ["--scenario", "default", "--rate", "40", "--truth", "\(dir)/t.json"])
        let path = try #require(sim.readLine())
        let host = ScriptedHost(path: path)
        #expect(host.run(timeout: 10) { host.readings.count >= 5 }, "fewer than 5 readings")
        sim.signal(SIGTERM)
        #expect(sim.wait(timeout: 10) == 0)
        let truth = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: "\(dir)/t.json"))) as? [String: Any])
        #expect(truth["ended"] as? String == "signal")
        #expect(((truth["sent"] as? [String: Any])?["insertions"] as? Int ?? 0) >= 5)
    }

    @Test("a scenario error exits 1 with the file, line and key")
    func badScenario() throws {
        let dir = TestSupport.temporaryDirectory("bad")
        try "coins: 5\nrat_per_s: 3\n".write(toFile: "\(dir)/bad.yaml", atomically: true, encoding: .utf8)
        let sim = try ChildProcess("coinsim", ["--scenario", "\(dir)/bad.yaml"])
        #expect(sim.wait() == 1)
        #expect(sim.stderr.contains("\(dir)/bad.yaml:2: key 'rat_per_s': unknown key"))
    }
}
