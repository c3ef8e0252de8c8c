import CoinMechHarness
import CoinMechClient
import CoinMechLedger
import CoinMechProtocol
@testable import CoinMechTestSupport
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
        _ = try harness.socketWhenUp()
        return harness
    }

    func waitFor(_ what: String = "a condition", timeout: Double = 10, _ condition: () throws -> Bool) throws {
        try TestSupport.waitUntil(what, timeout: timeout, condition)
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
        #expect(client.hello["protocol"] == 2)
        #expect(client.hello["daemon"] == "coinmechd")
        try waitFor("5 readings and a credited coin") {
            let counters = try client.request("status")["counters"]
            return (counters?["readings"]?.int ?? 0) >= 5 && (counters?["credited"]?.int ?? 0) >= 1
        }
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
        let probe = try connect(harness)
        var since: Int64 = 0
        var seen: [Int64] = []
        do {
            // The first connection is closed when this block ends, mid-stream.
            let first = try connect(harness)
            since = try first.request("subscribe")["since"]!.int!
            seen = try events(first, count: 10)
        }
        let resumeAfter = seen.last!
        // Coins keep coming while nobody listens: wait until 15 more events are on the ledger.
        try waitFor("15 events recorded while disconnected") { try probe.request("status")["last_seq"]!.int! >= resumeAfter + 25 }
        let missedWhileAway = try probe.request("status")["last_seq"]!.int!
        let second = try connect(harness)
        _ = try second.request("subscribe", ["since": .int(resumeAfter)])
        let resumed = try events(second, count: 15)
        _ = try harness.stopDaemon()
        // The same events as the ledger holds, without the pending accepts a default
        // subscription leaves out: no gap at the seam, no repeat.
        let expected = try harness.ledger().events(since: since, limit: 100_000).filter { !$0.isPendingAccept }.map(\.seq)
        #expect(seen == Array(expected.prefix(10)))
        #expect(resumed == Array(expected.drop { $0 <= resumeAfter }.prefix(15)))
        #expect(resumed.first! < missedWhileAway, "the resumed stream starts with events recorded while disconnected")
        #expect(Set(seen).isDisjoint(with: resumed))
    }

    @Test("subscribing with pending: true also shows accepts before the mech confirms them, each followed by its coin")
    func pendingSubscription() throws {
        let harness = try start(rate: 15)
        let client = try connect(harness)
        #expect(client.hello["protocol"]?.int == 2)
        _ = try client.request("subscribe", ["pending": true])
        var accepts: [Int64: Int64] = [:], coins: [Int64: Int64] = [:]
        try waitFor("5 accepts and their coins", timeout: 20) {
            guard let event = try client.nextEvent(timeout: 1)?["event"] else { return false }
            if event["kind"] == "decision", event["verdict"] == "accept" { accepts[event["seq"]!.int!] = event["device_seq"]!.int! }
            if event["kind"] == "coin" { coins[event["ref_seq"]!.int!] = event["seq"]!.int! }
            return Set(coins.keys).intersection(accepts.keys).count >= 5
        }
        for (decision, coin) in coins where accepts[decision] != nil { #expect(coin > decision) }
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
        _ = try harness.stopDaemon()
        let expected = try harness.ledger().events(since: since, limit: 100_000).filter { !$0.isPendingAccept }.map(\.seq)
        #expect(streams[0] == Array(expected.prefix(20)))
    }

    @Test("a client that does not read overflows and is cut off; others and deciding carry on")
    func slowClient() throws {
        // A long history first (coins as fast as the protocol allows), so a subscriber replaying
        // it from 0 fills its socket and its queue within a second if it does not read.
        let harness = try start(extra: "socket: {max_queued_events: 50}", scenario: "coins: 1500\nseed: 4\nmix: {quarter: 1}\nbaud: 115200\n", simulatorArguments: ["--lockstep"])
        _ = try harness.simulatorTruth()
        // Then steady traffic, as a kiosk sees it.
        try harness.startSimulator("coins: 0\nrate_per_s: 20\nseed: 5\nmix: {quarter: 1}\nbaud: 115200\nfirmware: {boot: 2}\n")
        let probe = try connect(harness)
        func readings() throws -> Int { Int(try probe.request("status")["counters"]!["readings"]!.int!) }
        try waitFor("the second simulator's coins") { try readings() >= 1510 }
        let baselineStart = try readings()
        try waitFor("60 more coins before the idle subscriber", timeout: 30) { try readings() >= baselineStart + 60 }
        let idleStart = try readings()
        let idle = try connect(harness)
        _ = try idle.request("subscribe", ["since": 0])  // and then reads nothing for a while
        let reader = try connect(harness)
        _ = try reader.request("subscribe")
        // The other subscriber keeps receiving while the idle one overflows.
        var received = 0
        try waitFor("the idle subscriber's overflow, and 60 events for the reader meanwhile", timeout: 60) {
            if try reader.nextEvent(timeout: 1) != nil { received += 1 }
            return received >= 60 && harness.daemonLog.contains("subscriber too slow: disconnected")
        }
        let idleEnd = try readings()
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
        let truth = try harness.stopSimulatorAndReadTruth()
        // Deciding carried on: every reading decided, the money right.
        let audit = try harness.audit()
        #expect(audit.lost.isEmpty && audit.doubled.isEmpty && audit.phantom.isEmpty, "\(audit.problems)")
        #expect(try harness.decisions().count == truth.sent.readings + harness.truths[0].sent.readings)
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
        try waitFor("3 accepted coins") { (try client.request("status")["counters"]?["accepted"]?.int ?? 0) >= 3 }
        let on = try client.request("inhibit", ["on": true])
        #expect(on["inhibited"] == true)
        #expect(try client.request("status")["inhibited"] == true)
        // The mech returns coins by itself while inhibited (the truth counts them below) and tells
        // the host nothing of them, so there is no event to wait on: two seconds of coins at 20/s.
        usleep(2_000_000)
        let off = try client.request("inhibit", ["on": false])
        #expect(off["inhibited"] == false)
        let acceptedAfter = try client.request("status")["counters"]!["accepted"]!.int!
        try waitFor("coins accepted again") { (try client.request("status")["counters"]?["accepted"]?.int ?? 0) > acceptedAfter }
        let truth = try harness.stopSimulatorAndReadTruth()
        _ = try harness.stopDaemon()
        #expect(truth.outcomes.inhibited >= 3, "\(truth.outcomes)")  // of about 40: a starved coinsim plays fewer
        let events = try harness.ledger().events(since: 0, limit: 100_000)
        #expect(events.filter { $0.kind == "inhibit" }.compactMap(\.detail).count == 2)
        // Between the two records, nothing was accepted: what still arrived was returned as inhibited.
        let (from, to) = (on["seq"]!.int!, off["seq"]!.int!)
        let between = events.filter { $0.kind == "decision" && $0.seq > from && $0.seq < to }
        #expect(between.allSatisfy { $0.verdict == "reject" && $0.reason == "inhibited" })
        let audit = try harness.audit()
        #expect(audit.lost.isEmpty && audit.doubled.isEmpty && audit.phantom.isEmpty, "\(audit.problems)")
    }

    @Test("collect resets the period's totals, not the lifetime's, and returns what was collected")
    func collect() throws {
        let harness = try start(rate: 20)
        let client = try connect(harness)
        try waitFor("credited coins") { (try client.request("totals")["current_value"]?["USD"]?.int ?? 0) > 0 }
        _ = try client.request("inhibit", ["on": true])  // hold the totals still…
        try waitFor("no coin pending") { try client.request("status")["pending"]?.int == 0 }  // …once the last ones settled
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
        try waitFor("2 credited coins") { (try connect(harness).request("status")["counters"]?["credited"]?.int ?? 0) >= 2 }
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

    /// The socket's path once the daemon listens there (fails the test after `timeout`).
    func socketWhenUp(timeout: Double = 20) throws -> String {
        try TestSupport.waitUntil("the daemon's socket", timeout: timeout) { FileManager.default.fileExists(atPath: socket) }
        return socket
    }

    /// Ends the simulator's endless session and returns its ground truth.
    func stopSimulatorAndReadTruth() throws -> GroundTruth {
        try stopSimulator()
        return try simulatorTruth()
    }
}
