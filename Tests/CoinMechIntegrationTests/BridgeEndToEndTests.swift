import CoinMechClient
import CoinMechHarness
import CoinMechLedger
import CoinMechProtocol
@testable import CoinMechTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// coinmech-bridge between a real coinmechd and a real mosquitto, with a consumer that stores
/// events by (cabinet, seq) and acks what it holds: each ledger event reaches it, through a
/// kill -9 of the bridge and of the broker, and it holds every one of the ledger's seqs.
@Suite("Fleet bridge: every ledger event reaches a consumer that acks, through kill -9 of the bridge and the broker", .serialized)
struct BridgeEndToEndTests {
    /// mosquitto on loopback, persisting to its folder every second (docs/FLEET.md's test setup).
    /// The harness's broker: a real mosquitto with persistence on, saved every second.
    typealias Broker = MosquittoBroker

    /// The fleet's side, small: a persistent session on every cabinet's `event`, each event kept
    /// once by seq, and the highest contiguous seq acked (retained) on the cabinet's `ack`.
    final class Consumer {
        let broker: Broker
        let cabinet = "c-0042"
        private var subscriber: ChildProcess?
        /// seq → (kind, time) of the first copy stored.
        private(set) var stored: [Int64: (kind: String, time: Double)] = [:]
        private(set) var copies = 0
        private(set) var acked: Int64 = 0

        init(broker: Broker) { self.broker = broker }

        /// Reads what arrived for up to `seconds`, acking as it goes; a subscriber the broker's
        /// death ended is started again (same client id: the broker's session holds what came meanwhile).
        func read(for seconds: Double) throws {
            let end = Date().addingTimeInterval(seconds)
            while Date() < end {
                if subscriber?.isRunning != true {
                    _ = subscriber?.wait(timeout: 5)
                    guard Loopback.accepts(broker.port) else {
                        usleep(100_000)
                        continue
                    }
                    subscriber = try ChildProcess("/usr/bin/mosquitto_sub", ["-h", "127.0.0.1", "-p", "\(broker.port)", "-q", "1", "-c", "-i", "fleet-test",
                                                                            "-t", "coinmech/v1/+/+/event"], absolute: true)
                }
                guard let line = subscriber?.readLine(timeout: 0.3) else { continue }
                guard let message = JSON.parse(line), message["v"]?.int == 1, message["cabinet"]?.string == cabinet, let seq = message["seq"]?.int,
                      let event = message["event"], event["seq"]?.int == seq else {
                    throw TestFailure("not an event message: \(line)")
                }
                copies += 1
                if stored[seq] == nil { stored[seq] = (event["kind"]?.string ?? "?", event["time"]?.double ?? 0) }
                var contiguous = acked
                while stored[contiguous + 1] != nil { contiguous += 1 }
                if contiguous > acked {
                    acked = contiguous
                    let ack = try ChildProcess("/usr/bin/mosquitto_pub", ["-h", "127.0.0.1", "-p", "\(broker.port)", "-q", "1", "-r",
                                                                         "-t", "coinmech/v1/test-site/\(cabinet)/ack",
                                                                         "-m", #"{"v":1,"cabinet":"\#(cabinet)","seq":\#(acked),"time":1}"#], absolute: true)
                    _ = ack.wait(timeout: 10)
                }
            }
        }

        func stop() {
            subscriber?.signal(SIGTERM)
            _ = subscriber?.wait(timeout: 10)
        }
    }

    /// The cabinet's `state`: the retained message first, then the next within 15 s.
    static func states(_ broker: Broker) throws -> ChildProcess {
        try ChildProcess("/usr/bin/mosquitto_sub", ["-h", "127.0.0.1", "-p", "\(broker.port)", "-C", "2", "-W", "15",
                                                   "-t", "coinmech/v1/test-site/c-0042/state"], absolute: true)
    }

    /// The retained message of the cabinet's `name` topic.
    static func retained(_ broker: Broker, _ name: String) -> JSON? {
        guard let sub = try? ChildProcess("/usr/bin/mosquitto_sub", ["-h", "127.0.0.1", "-p", "\(broker.port)", "-C", "1", "-W", "5",
                                                                    "-t", "coinmech/v1/test-site/c-0042/\(name)"], absolute: true) else { return nil }
        defer { _ = sub.wait(timeout: 10) }
        return JSON.parse(sub.readLine(timeout: 5) ?? "")
    }

    @Test("each ledger event once in the consumer's store, in full, through a kill -9 of the bridge and of the broker; the will says the bridge is gone; the cursor follows the acks")
    func exactlyOnceAtTheConsumer() throws {
        let harness = try DaemonHarness()
        let broker = try Broker(dir: TestSupport.temporaryDirectory("mosquitto"), autosave: 1)
        let window = 32
        // An ack timeout far beyond the test: what comes back after a crash comes from the
        // resend the contract says (from the cursor after a bridge start or a broker reconnect),
        // not from the timeout's.
        let bridgeArguments = try harness.bridgeConfiguration(mqtt: "{host: 127.0.0.1, port: \(broker.port), keepalive_s: 5, tls: off}", "metrics: {listen: \"127.0.0.1:0\"}", "delivery: {window: \(window), ack_timeout_s: 300}")
        try harness.startSimulator("coins: 100\nrate_per_s: 8\nseed: 5\nmix: {quarter: 2, dime: 1, nickel: 1}\n")
        try harness.startDaemon()
        var bridge = try ChildProcess("coinmech-bridge", bridgeArguments)
        let consumer = Consumer(broker: broker)
        defer {
            consumer.stop()
            bridge.signal(SIGKILL)
            _ = bridge.wait(timeout: 10)
            broker.kill()
            _ = try? harness.stopDaemon()
        }
        // Until the first events arrive: a debug daemon and bridge starting on a loaded machine
        // can take more than the few seconds this once read for.
        let first = Date().addingTimeInterval(30)
        while consumer.stored.isEmpty, Date() < first { try consumer.read(for: 0.5) }
        try #require(!consumer.stored.isEmpty, "nothing reached the consumer in 30 s: \(bridge.stderr)")

        // The bridge dies: the broker says so (its last will, within 1.5 keepalives); a new one
        // starts from its cursor file.
        let will = try Self.states(broker)
        let online = JSON.parse(will.readLine(timeout: 10) ?? "")
        #expect(online?["state"] == "online" && online?["daemon_version"]?.string != nil, "\(String(describing: online))")
        #expect(online?["heartbeat_s"]?.double == 65, "status.refresh_s 60 + poll_s 5: the longest the fleet may wait for a word")
        bridge.signal(SIGKILL)
        #expect(bridge.wait(timeout: 10) == 137)
        let gone = JSON.parse(will.readLine(timeout: 15) ?? "")
        #expect(gone?["state"] == "offline" && gone?["reason"] == "lost", "\(String(describing: gone))")
        _ = will.wait(timeout: 5)
        bridge = try ChildProcess("coinmech-bridge", bridgeArguments)
        try consumer.read(for: 2)

        // The consumer goes away; the broker queues for its session and is killed with what it
        // had PUBACKed and not saved, then comes back from its file.
        consumer.stop()
        usleep(1_500_000)
        broker.kill()
        try broker.start()
        _ = try harness.simulatorTruth()
        let events = try harness.ledger().events(since: 0, limit: 100_000)
        let deadline = Date().addingTimeInterval(60)
        while consumer.acked < events.last?.seq ?? 0, Date() < deadline { try consumer.read(for: 0.5) }
        let missing = Set(events.map(\.seq)).subtracting(consumer.stored.keys).sorted()
        try #require(missing.isEmpty, "never reached the consumer: \(missing); acked \(consumer.acked); bridge: \(bridge.stderr)")

        // Every seq of the ledger, once, as the ledger has it (kind and time never change in a row).
        #expect(Set(consumer.stored.keys) == Set(events.map(\.seq)))
        for event in events {
            #expect(consumer.stored[event.seq]?.kind == event.kind, "seq \(event.seq)")
            #expect(abs((consumer.stored[event.seq]?.time ?? 0) - event.time) < 0.001, "seq \(event.seq)")
        }
        // Resent from the cursor, not from the start: at most a window again per start and reconnect.
        #expect(consumer.copies >= events.count && consumer.copies <= events.count + 3 * window, "\(consumer.copies) copies of \(events.count)")
        // `totals` is the daemon's, retained; `status` says at once why coins are returned.
        let daemon = try CoinMechConnection(path: "\(harness.dir)/run/coinmechd.sock")
        let totals = try daemon.request(.totals)
        try TestSupport.waitUntil("the retained totals at the daemon's", timeout: 10) {
            Self.retained(broker, "totals")?["totals"]?["current_value"] == totals["current_value"]
        }
        // coinsim has played its coins and gone: the source is why coins are returned now.
        try TestSupport.waitUntil("status saying the source is why coins are returned", timeout: 10) {
            Self.retained(broker, "status")?["inhibited_by"] == ["source"]
        }
        try daemon.request(.inhibit(true))
        try TestSupport.waitUntil("status saying the operator inhibited the cabinet", timeout: 10) {
            Self.retained(broker, "status")?["inhibited_by"] == ["operator", "source"]
        }
        #expect(Self.retained(broker, "status")?["delivery"]?["guarantee"] == "end_to_end")
        try daemon.request(.inhibit(false))
        // The cursor on disk follows the consumer's ack (written within a second), and a clean
        // stop says offline (retained), reason stopped.
        try TestSupport.waitUntil("cursor.json at the last ack", timeout: 10) {
            JSON.parse((try? String(contentsOfFile: "\(harness.dir)/bridge/cursor.json", encoding: .utf8)) ?? "")?["acked"]?.int == consumer.acked
        }
        bridge.signal(SIGTERM)
        #expect(bridge.wait(timeout: 20) == 0, "\(bridge.stderr)")
        let cursor = try #require(JSON.parse(try String(contentsOfFile: "\(harness.dir)/bridge/cursor.json", encoding: .utf8)))
        #expect(cursor["acked"]?.int == consumer.acked && cursor["cabinet"] == "c-0042")
        let state = try ChildProcess("/usr/bin/mosquitto_sub", ["-h", "127.0.0.1", "-p", "\(broker.port)", "-C", "1", "-W", "10",
                                                               "-t", "coinmech/v1/test-site/c-0042/state"], absolute: true)
        let retained = JSON.parse(state.readLine(timeout: 10) ?? "")
        #expect(retained?["state"] == "offline" && retained?["reason"] == "stopped", "\(String(describing: retained)): \(bridge.stderr)")
        #expect(state.wait(timeout: 10) == 0)
    }
}

/// What went wrong outside an expectation, said.
struct TestFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
