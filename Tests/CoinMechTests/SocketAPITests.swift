import CoinMechClient
import CoinMechLedger
import CoinMechProtocol
import CoinSimCore
import Foundation
import Testing

/// The Unix-socket API against a real daemon fed by a real simulator.
@Suite("Socket API and coinctl against a real daemon", .serialized)
struct SocketAPITests {
    /// A running daemon with an endless simulator at `rate` coins/s.
    func start(rate: Double = 10, extra: String = "", scenario: String? = nil, simulatorArguments: [String] = []) throws -> DaemonHarness {
        let harness = try DaemonHarness(extra: extra)
        try harness.startSimulator(scenario ?? "coins: 0\nrate_per_s: \(rate)\nseed: 3\nmix: {quarter: 2, dime: 1}\nothers: {slug: 0.1}\n",
                                   arguments: simulatorArguments)
        try harness.startDaemon()
        try waitFor { FileManager.default.fileExists(atPath: harness.socket) }
        return harness
    }

    func waitFor(timeout: Double = 10, _ condition: () throws -> Bool) throws {
        let deadline = Date().addingTimeInterval(timeout)
        while try !condition() {
            guard Date() < deadline else { throw ClientError.timeout }
            usleep(20_000)
        }
    }

    func connect(_ harness: DaemonHarness) throws -> CoinMechConnection { try CoinMechConnection(path: harness.socket) }

    /// The seqs of the next `count` events on a subscribed connection (fails after `timeout` s).
    func events(_ client: CoinMechConnection, count: Int, timeout: Double = 20) throws -> [Int64] {
        var seqs: [Int64] = []
        let deadline = Date().addingTimeInterval(timeout)
        while seqs.count < count {
            guard Date() < deadline else { throw ClientError.timeout }
            if let event = try client.nextEvent(timeout: 1), let seq = event["seq"]?.int { seqs.append(seq) }
        }
        return seqs
    }

    @Test("hello, status, totals, chain, events: every read command answers, echoing the id")
    func readCommands() throws {
        let harness = try start()
        let client = try connect(harness)
        #expect(client.hello["protocol"] == 1)
        #expect(client.hello["daemon"] == "coinmechd")
        try waitFor { (try client.request("status")["counters"]?["readings"]?.int ?? 0) >= 5 }
        let status = try client.request("status")
        #expect(status["source"]?["state"] == "connected")
        #expect(status["inhibited"] == false)
        #expect(status["ledger"] == "ok")
        #expect(status["chain_generation"]?.int ?? 0 >= 1)
        let totals = try client.request("totals")
        #expect(totals["current_value"]?["USD"]?.int ?? 0 > 0)
        #expect(totals["lifetime"]?.array?.isEmpty == false)
        let chain = try client.request("chain")
        #expect(chain["links"]?.array?.map { $0["name"]?.string } == ["sanity", "weight-floor", "usd"])
        #expect(chain["links"]?.array?.first?["sha256"]?.string?.count == 64)
        #expect(chain["links"]?.array?.last?["statistics"]?["accepts"]?.int ?? 0 > 0)
        let events = try client.request("events", ["since": 0, "limit": 3])
        #expect(events["events"]?.array?.map { $0["seq"]?.int } == [1, 2, 3])
        #expect(events["events"]?.array?.first?["kind"] == "startup")
        // The raw reply carries the request's id.
        try client.sendLine(#"{"cmd":"status","id":"abc"}"#)
        #expect(try client.readMessage(timeout: 5)["id"] == "abc")
        _ = try harness.stopDaemon()
    }

    @Test("bad requests get an error object and the connection stays open", arguments: [
        ("not json at all", "bad_json"),
        ("[1, 2]", "bad_json"),
        (#"{"id": 7}"#, "bad_request"),
        (#"{"cmd": "fly", "id": 7}"#, "unknown_command"),
        (#"{"cmd": "events", "since": "yesterday", "id": 7}"#, "bad_request"),
        (#"{"cmd": "events", "limit": 5000, "id": 7}"#, "bad_request"),
        (#"{"cmd": "inhibit", "on": "yes", "id": 7}"#, "bad_request"),
        (String(repeating: "x", count: 5000), "line_too_long"),
    ])
    func badRequests(line: String, code: String) throws {
        let harness = try start(rate: 2)
        let client = try connect(harness)
        try client.sendLine(line)
        let reply = try client.readMessage(timeout: 5)
        #expect(reply["ok"] == false)
        #expect(reply["error"]?["code"]?.string == code)
        #expect(reply["error"]?["message"]?.string?.isEmpty == false)
        #expect(try client.request("status")["ledger"] == "ok")  // still open
        _ = try harness.stopDaemon()
    }

    @Test("reload rebuilds the chain and answers with the new generation and fingerprint")
    func reload() throws {
        let harness = try start(rate: 2)
        let client = try connect(harness)
        let before = try client.request("status")["chain_generation"]!.int!
        let result = try client.request("reload")
        #expect(result["generation"]?.int == before + 1)
        #expect(result["fingerprint"]?.string?.count == 64)
        #expect(try client.request("chain")["generation"]?.int == before + 1)
        _ = try harness.stopDaemon()
    }

    @Test("a subscriber that disconnects and resumes with since gets exactly the missed events")
    func resume() throws {
        let harness = try start(rate: 15)
        let first = try connect(harness)
        let since = try first.request("subscribe")["since"]!.int!
        let seen = try events(first, count: 10)
        let resumeAfter = seen.last!
        withExtendedLifetime(first) {}  // the first connection is dropped here, while coins keep coming
        usleep(700_000)
        let second = try connect(harness)
        _ = try second.request("subscribe", ["since": .int(resumeAfter)])
        let resumed = try events(second, count: 15)
        #expect(seen == Array((since + 1)...(since + 10)))
        #expect(resumed == Array((resumeAfter + 1)...(resumeAfter + 15)))  // no gap at the seam, no repeat
        _ = try harness.stopDaemon()
    }

    @Test("50 clients at once all see the same events")
    func fiftyClients() throws {
        let harness = try start(rate: 15)
        let clients = try (0..<50).map { _ in try connect(harness) }
        let since = try clients[0].request("status")["last_seq"]!.int!
        for client in clients { _ = try client.request("subscribe", ["since": .int(since)]) }
        var streams: [[Int64]] = []
        for client in clients { streams.append(try events(client, count: 20)) }
        #expect(Set(streams.map { $0 }).count == 1)
        #expect(streams[0] == Array((since + 1)...(since + 20)))
        #expect(try clients.allSatisfy { try $0.request("status")["ledger"] == "ok" })
        _ = try harness.stopDaemon()
    }

    @Test("a client that does not read overflows and is cut off; others and deciding carry on")
    func slowClient() throws {
        // A long history first (coins as fast as the protocol allows), so a subscriber replaying
        // it from 0 fills its socket and its queue within a second if it does not read.
        let harness = try start(extra: "socket: {max_queued_events: 50}", scenario: "coins: 1500\nseed: 4\nmix: {quarter: 1}\n", simulatorArguments: ["--lockstep"])
        _ = try harness.simulatorTruth()
        // Then steady traffic, as a kiosk sees it.
        try harness.startSimulator("coins: 0\nrate_per_s: 20\nseed: 5\nmix: {quarter: 1}\n")
        let probe = try connect(harness)
        func readings() throws -> Int { Int(try probe.request("status")["counters"]!["readings"]!.int!) }
        try waitFor { try readings() >= 1510 }
        let baselineStart = try readings()
        usleep(3_000_000)
        let idleStart = try readings()
        let idle = try connect(harness)
        _ = try idle.request("subscribe", ["since": 0])  // and then reads nothing for a while
        let reader = try connect(harness)
        _ = try reader.request("subscribe")
        var received = 0
        let end = Date().addingTimeInterval(4)
        while Date() < end {
            if try reader.nextEvent(timeout: 1) != nil { received += 1 }
        }
        let idleEnd = try readings()
        #expect(harness.daemonLog.contains("subscriber too slow: disconnected"))
        // What is left in the idle client's socket ends with the overflow notice, then the end.
        var overflowed = false
        let stopReading = Date().addingTimeInterval(10)
        while Date() < stopReading, let message = try? idle.readMessage(timeout: 2) {
            if message["type"] == "overflow" {
                overflowed = true
                #expect(message["resume_from"]?.int != nil)
            }
        }
        #expect(overflowed)
        #expect(received >= 60)  // the other subscriber kept up: 20 coins/s for 4 s
        let truth = try harness.stopSimulatorAndReadTruth()
        #expect(truth.outcomes.deadlineMisses == 0)
        // Deciding latency at the device, before and while the idle subscriber was attached.
        let offset = 1500
        func p99(_ range: ClosedRange<Int>) -> Int {
            let samples = truth.coins.filter { range.contains($0.insertion + offset) }.compactMap(\.latencyUs).sorted()
            return samples.isEmpty ? 0 : samples[min(samples.count - 1, Int(Double(samples.count) * 0.99))]
        }
        print("deciding latency p99 at the device: \(p99((baselineStart + 1)...idleStart)) µs without an idle subscriber, "
              + "\(p99((idleStart + 1)...idleEnd)) µs with one (\(idleEnd - idleStart) coins)")
        _ = try harness.stopDaemon()
    }

    @Test("inhibit makes the mech return coins; it is recorded; lifting it restores accepting")
    func inhibit() throws {
        let harness = try start(rate: 20)
        let client = try connect(harness)
        try waitFor { (try client.request("status")["counters"]?["accepted"]?.int ?? 0) >= 3 }
        #expect(try client.request("inhibit", ["on": true])["inhibited"] == true)
        #expect(try client.request("status")["inhibited"] == true)
        let acceptedBefore = try client.request("status")["counters"]!["accepted"]!.int!
        usleep(1_000_000)
        #expect(try client.request("status")["counters"]!["accepted"]!.int! == acceptedBefore)
        #expect(try client.request("inhibit", ["on": false])["inhibited"] == false)
        try waitFor { (try client.request("status")["counters"]?["accepted"]?.int ?? 0) > acceptedBefore }
        let truth = try harness.stopSimulatorAndReadTruth()
        #expect(truth.outcomes.inhibited > 5)  // coins the mech returned by itself while inhibited
        let events = try harness.ledger().events(since: 0, limit: 100_000).filter { $0.kind == "inhibit" }
        #expect(events.compactMap(\.detail).count == 2)
        _ = try harness.stopDaemon()
    }

    @Test("collect resets the period's totals, not the lifetime's, and returns what was collected")
    func collect() throws {
        let harness = try start(rate: 20)
        let client = try connect(harness)
        try waitFor { (try client.request("totals")["current_value"]?["USD"]?.int ?? 0) > 0 }
        _ = try client.request("inhibit", ["on": true])  // hold the totals still
        usleep(200_000)
        let before = try client.request("totals")
        let collected = try client.request("collect")
        let rows = collected["collected"]?.array ?? []
        #expect(rows.reduce(0) { $0 + ($1["value_minor"]?.int ?? 0) } == before["current_value"]?["USD"]?.int)
        let after = try client.request("totals")
        #expect(after["current"]?.array?.isEmpty == true)
        #expect(after["lifetime_value"] == before["lifetime_value"])
        #expect(try harness.ledger().events(since: 0, limit: 100_000).contains { $0.kind == "collect" })
        _ = try harness.stopDaemon()
    }

    @Test("a peer that is not allowed gets forbidden for control commands, and may still read")
    func forbidden() throws {
        let harness = try start(rate: 2, extra: "socket: {mode: \"0666\", control_users: [root]}")
        chmod(harness.dir, 0o755)
        let status = try ChildProcess("/usr/bin/setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups",
                                                           "\(TestSupport.binDirectory)/coinctl", "status", "--socket", harness.socket], absolute: true)
        #expect(status.wait() == 0, "\(status.stderr)")
        let inhibit = try ChildProcess("/usr/bin/setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups",
                                                            "\(TestSupport.binDirectory)/coinctl", "inhibit", "on", "--socket", harness.socket], absolute: true)
        #expect(inhibit.wait() == 3)
        #expect(inhibit.stderr.contains("may not use 'inhibit' (forbidden)"))
        #expect(try connect(harness).request("status")["inhibited"] == false)
        _ = try harness.stopDaemon()
    }

    @Test("coinctl: tables, --json, and clear messages when the daemon is not running")
    func coinctl() throws {
        let harness = try start(rate: 10)
        try waitFor { (try connect(harness).request("status")["counters"]?["accepted"]?.int ?? 0) >= 2 }
        let table = try ChildProcess("coinctl", ["totals", "--socket", harness.socket])
        #expect(table.wait() == 0)
        let text = String(decoding: table.readToEnd(), as: UTF8.self)
        #expect(text.contains("current   USD       total"))
        let json = try ChildProcess("coinctl", ["status", "--json", "--socket", harness.socket])
        #expect(json.wait() == 0)
        #expect(JSON.parse(String(decoding: json.readToEnd(), as: UTF8.self))?["ledger"] == "ok")
        _ = try harness.stopDaemon()
        let gone = try ChildProcess("coinctl", ["status", "--socket", harness.socket])
        #expect(gone.wait() == 2)
        #expect(gone.stderr == "coinctl: coinmechd is not running (no socket at \(harness.socket))\n")
    }
}

extension DaemonHarness {
    var socket: String { "\(dir)/run/coinmechd.sock" }

    /// Ends the simulator's endless session and returns its ground truth.
    func stopSimulatorAndReadTruth() throws -> GroundTruth {
        try stopSimulator()
        return try simulatorTruth()
    }
}
