import CoinMechClient
import CoinMechHarness
import CoinMechProtocol
@testable import CoinMechTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The fleet's commands through a real mosquitto to a real coinmechd (docs/FLEET.md B11–B15):
/// what the allow-list lets through runs once per id and before its deadline, and `resend`
/// publishes the ledger's events again.
@Suite("Fleet bridge commands: allowed ones run once per id before their deadline; the rest are refused, said why", .serialized)
struct BridgeCommandsEndToEndTests {
    typealias Broker = BridgeEndToEndTests.Broker

    /// Every reply the bridge publishes, by id.
    final class Replies {
        let sub: ChildProcess
        var seen: [(id: String, reply: JSON)] = []

        init(_ broker: Broker) throws {
            sub = try ChildProcess("/usr/bin/mosquitto_sub", ["-h", "127.0.0.1", "-p", "\(broker.port)", "-q", "1", "-v",
                                                             "-t", "coinmech/v1/test-site/c-0042/reply/+"], absolute: true)
        }

        /// The reply to `id` (the next one, after `after` seen before it), failing after `timeout`.
        func reply(_ id: String, after: Int = 0, timeout: Double = 20) throws -> JSON {
            let deadline = Date().addingTimeInterval(timeout)
            while Date() < deadline {
                if let found = seen.dropFirst(after).first(where: { $0.id == id }) { return found.reply }
                guard let line = sub.readLine(timeout: 1) else { continue }
                let parts = line.split(separator: " ", maxSplits: 1).map(String.init)
                guard parts.count == 2, let reply = JSON.parse(parts[1]) else { throw TestFailure("not a reply: \(line)") }
                #expect(parts[0] == "coinmech/v1/test-site/c-0042/reply/\(reply["id"]?.string ?? "?")", "a reply on its id's topic")
                seen.append((reply["id"]?.string ?? "?", reply))
            }
            throw TestFailure("no reply to \(id) within \(timeout) s; seen \(seen.map(\.id))")
        }

        func stop() {
            sub.signal(SIGTERM)
            _ = sub.wait(timeout: 10)
        }
    }

    static func command(_ broker: Broker, _ name: String, _ payload: JSON, retained: Bool = false) throws {
        let publish = try ChildProcess("/usr/bin/mosquitto_pub", ["-h", "127.0.0.1", "-p", "\(broker.port)", "-q", "1"] + (retained ? ["-r"] : [])
                                       + ["-t", "coinmech/v1/test-site/c-0042/cmd/\(name)", "-m", payload.description], absolute: true)
        #expect(publish.wait(timeout: 10) == 0)
    }

    static func ahead(_ seconds: Double) -> JSON { .double(Date().timeIntervalSince1970 + seconds) }

    @Test("status, inhibit and resend run and answer once per id; not allowed, unknown, expired, too far ahead and retained are refused or ignored, never run")
    func commands() throws {
        let harness = try DaemonHarness()
        let broker = try Broker(dir: TestSupport.temporaryDirectory("mosquitto"), autosave: 1)
        let bridgeArguments = try harness.bridgeConfiguration(mqtt: "{host: 127.0.0.1, port: \(broker.port), keepalive_s: 5, tls: off}", "metrics: {listen: \"127.0.0.1:0\"}", "delivery: {acks: off}", "commands: {allow: [status, totals, resend, inhibit]}")
        try harness.startSimulator("coins: 6\nrate_per_s: 20\nseed: 3\nmix: {quarter: 1}\n")
        try harness.startDaemon()
        _ = try harness.simulatorTruth()
        let replies = try Replies(broker)
        var bridge = try ChildProcess("coinmech-bridge", bridgeArguments)
        defer {
            replies.stop()
            bridge.signal(SIGKILL)
            _ = bridge.wait(timeout: 10)
            broker.kill()
            _ = try? harness.stopDaemon()
        }
        // The bridge is subscribed once it answers: ask until it does (a command sent before its
        // subscription is not for it: commands are not retained).
        try TestSupport.waitUntil("the bridge answering status", timeout: 30) {
            try Self.command(broker, "status", ["v": 1, "id": "hello", "deadline": Self.ahead(60)])
            return (try? replies.reply("hello", timeout: 2))?["ok"] == true
        }
        let status = try replies.reply("hello")
        let daemon = try CoinMechConnection(path: "\(harness.dir)/run/coinmechd.sock")
        #expect(status["result"]?["last_seq"] != nil && status["cabinet"] == "c-0042", "the daemon's status, unchanged: \(status)")

        // inhibit, allowed, twice with one id (QoS 1 may deliver it twice): one inhibit in the ledger.
        let inhibit: JSON = ["v": 1, "id": "inh-1", "deadline": Self.ahead(60), "args": ["on": true], "by": "alice"]
        try Self.command(broker, "inhibit", inhibit)
        let first = try replies.reply("inh-1")
        #expect(first["ok"] == true && first["result"]?["inhibited"] == true && first["by"] == "alice", "\(first)")
        try Self.command(broker, "inhibit", inhibit)
        let seenBefore = replies.seen.count
        let repeated = try replies.reply("inh-1", after: seenBefore)
        #expect(repeated == first, "a repeat is answered with the same reply")
        #expect(try daemon.request(.status)["inhibited"] == true)
        let inhibits = try harness.ledger().events(since: 0, limit: 100_000).filter { $0.kind == "inhibit" }
        #expect(inhibits.count == 1, "the repeat did not run again: \(inhibits)")

        // Refusals, each with its code; none reaches the daemon.
        let lastSeq = try daemon.request(.status)["last_seq"]
        try Self.command(broker, "reload", ["v": 1, "id": "rel-1", "deadline": Self.ahead(60)])
        #expect(try replies.reply("rel-1")["error"]?["code"] == "not_allowed")
        try Self.command(broker, "collect", ["v": 1, "id": "col-1", "deadline": Self.ahead(60)])
        #expect(try replies.reply("col-1")["error"]?["code"] == "unknown_command")
        try Self.command(broker, "inhibit", ["v": 1, "id": "late-1", "deadline": Self.ahead(-5), "args": ["on": false]])
        #expect(try replies.reply("late-1")["error"]?["code"] == "expired")
        try Self.command(broker, "inhibit", ["v": 1, "id": "far-1", "deadline": Self.ahead(3600), "args": ["on": false]])
        #expect(try replies.reply("far-1")["error"]?["code"] == "bad_request")
        #expect(try daemon.request(.status)["inhibited"] == true, "the expired and too-far inhibit off did not run")
        #expect(try daemon.request(.status)["last_seq"] == lastSeq, "no refusal wrote to the ledger")

        // resend: seqs 1…5 again on `event`, each as the ledger has it.
        // The subscriber is in place once it prints a retained probe, which the broker sends at subscription.
        let probe = try ChildProcess("/usr/bin/mosquitto_pub", ["-h", "127.0.0.1", "-p", "\(broker.port)", "-q", "1", "-r",
                                                               "-t", "test/probe", "-m", "probe"], absolute: true)
        #expect(probe.wait(timeout: 10) == 0)
        let events = try ChildProcess("/usr/bin/mosquitto_sub", ["-h", "127.0.0.1", "-p", "\(broker.port)", "-q", "1", "-C", "6", "-W", "20",
                                                                "-t", "test/probe", "-t", "coinmech/v1/test-site/c-0042/event"], absolute: true)
        #expect(events.readLine(timeout: 10) == "probe")
        try Self.command(broker, "resend", ["v": 1, "id": "gap-1", "deadline": Self.ahead(60), "args": ["from": 1, "to": 5]])
        let resend = try replies.reply("gap-1")
        #expect(resend["ok"] == true && resend["result"] == ["from": 1, "to": 5, "resent": 5, "missing": []], "\(resend)")
        var copies: [Int64] = []
        while let line = events.readLine(timeout: 10) { if let seq = JSON.parse(line)?["seq"]?.int { copies.append(seq) } }
        #expect(copies == [1, 2, 3, 4, 5], "\(copies)")
        _ = events.wait(timeout: 10)

        // B15: a retained command reaches a bridge that subscribes after it, flagged retained:
        // ignored. The next command's reply comes, and none came for the retained one before it.
        // (Retained or not, a message to a subscriber already in place is not flagged: the
        // bridge is away when it is published.)
        bridge.signal(SIGKILL)
        _ = bridge.wait(timeout: 10)
        try Self.command(broker, "inhibit", ["v": 1, "id": "ret-1", "deadline": Self.ahead(60), "args": ["on": false]], retained: true)
        bridge = try ChildProcess("coinmech-bridge", bridgeArguments)
        let mark = replies.seen.count
        var attempt = 0
        try TestSupport.waitUntil("the new bridge answering status", timeout: 30) {
            attempt += 1
            try Self.command(broker, "status", ["v": 1, "id": .string("again-\(attempt)"), "deadline": Self.ahead(60)])
            return (try? replies.reply("again-\(attempt)", after: mark, timeout: 2)) != nil
        }
        #expect(!replies.seen.dropFirst(mark).contains { $0.id == "ret-1" }, "a retained command was answered")
        #expect(try daemon.request(.status)["inhibited"] == true, "the retained inhibit off did not run")
        #expect(bridge.stderr.contains("retained command"), "the bridge said why it ignored it: \(bridge.stderr)")
    }
}
