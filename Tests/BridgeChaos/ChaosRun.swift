import CoinMechClient
import CoinMechHarness
import CoinMechLedger
import CoinSimCore
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// One run: the cabinet (coinsim, coinmechd, coinmech-bridge), the broker and the consumer, in
/// a scratch directory; the faults in turn while coins keep coming; then the store against the
/// ledger.
final class ChaosRun {
    let bin: String
    let dir: String
    var random: SplitMix64
    let cabinet = "c-chaos"
    let site = "test-site"
    var prefix: String { "coinmech/v1/\(site)/\(cabinet)/" }
    private var simulator: ChildProcess?
    private var daemon: ChildProcess?
    private var bridge: ChildProcess?
    private var starts: [String: Int] = [:]
    private var socket: String { "\(dir)/run/coinmechd.sock" }

    init(bin: String, seed: UInt64) throws {
        self.bin = bin
        random = SplitMix64(seed: seed)
        var template = Array("\(NSTemporaryDirectory())/coinmech-bridge-chaos-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw ChaosError("mkdtemp: \(String(cString: strerror(errno)))") }
        dir = String(cString: made)
        for tool in ["coinmechd", "coinsim", "coinmech-bridge", "libcoin-table.so"] where !FileManager.default.fileExists(atPath: "\(bin)/\(tool)") {
            throw ChaosError("\(bin)/\(tool) not found: build first (swift build), or pass --bin")
        }
        for tool in ["/usr/sbin/mosquitto", "/usr/bin/mosquitto_sub", "/usr/bin/mosquitto_pub"] where !FileManager.default.fileExists(atPath: tool) {
            throw ChaosError("\(tool) not found: scripts/bootstrap installs mosquitto and mosquitto-clients")
        }
        try FixtureDaemon.configuration(source: "{kind: serial, device: mech, baud: 115200}", chain: FixtureChains.usd)
            .write(toFile: "\(dir)/coinmechd.yaml", atomically: true, encoding: .utf8)
        // Coins without end, about 16 events a second, until coinsim is told to stop.
        try """
            name: chaos
            seed: \(seed)
            coins: 0
            rate_per_s: 8
            baud: 115200
            currency: USD
            mix: {quarter: 3, dime: 2, nickel: 1}
            """.write(toFile: "\(dir)/chaos.yaml", atomically: true, encoding: .utf8)
    }

    func play(bridgeKills: Int, brokerKills: Int, brokerDown: Double, subscriberKills: Int, acksOff: Bool, tls: TestCA?) throws -> ChaosVerdict {
        let broker: MosquittoBroker
        do { broker = try MosquittoBroker(dir: dir, tls: tls) } catch { throw ChaosError("\(error)") }
        // An ack timeout of 3 s: what a consumer's crash loses comes back within seconds (B7).
        try """
            cabinet: \(cabinet)
            site: \(site)
            socket: {path: \(socket)}
            state_dir: \(dir)/bridge
            metrics: {listen: "127.0.0.1:0"}
            mqtt: {host: 127.0.0.1, port: \(broker.port), keepalive_s: 5, \(broker.tlsSetting)}
            delivery: {window: 64, ack_timeout_s: 3, acks: \(acksOff ? "off" : "required")}
            """.write(toFile: "\(dir)/bridge.yaml", atomically: true, encoding: .utf8)
        let consumer = ChaosConsumer(broker: broker, dir: dir, cabinet: cabinet, prefix: prefix)
        var verdict = ChaosVerdict()
        defer {
            consumer.stop()
            for child in [bridge, daemon, simulator] { child?.signal(SIGKILL); _ = child?.wait(timeout: 10) }
            broker.kill()
        }
        let sim = try start("coinsim", ["--scenario", "\(dir)/chaos.yaml", "--link", "\(dir)/mech", "--truth", "\(dir)/truth.json", "--linger-ms", "3000"])
        simulator = sim
        guard sim.readLine(timeout: 20) != nil else { throw ChaosError("coinsim printed no device: see \(dir)/coinsim-1.log") }
        try startDaemon()
        bridge = try start("coinmech-bridge", ["--config", "\(dir)/bridge.yaml"])
        try consumer.pump(for: 3)
        guard consumer.copies > 0 else { throw ChaosError("nothing reached the consumer in 3 s: see \(dir)/coinmech-bridge-1.log") }

        // The faults, interleaved: every bridge kill, with the broker's, the subscriber's, the
        // daemon restart and the cleared sessions spread among them.
        var faults: [Fault] = Array(repeating: .bridgeKill, count: bridgeKills) + Array(repeating: .brokerKill, count: brokerKills)
            + Array(repeating: .subscriberKill, count: subscriberKills) + [.daemonRestart, .sessionsCleared]
        faults.shuffle(using: &random)
        if brokerDown > 0 { faults.insert(.brokerDown, at: faults.count / 2) }
        for fault in faults {
            try consumer.pump(for: Double(random.next() % 1500 + 300) / 1000)
            switch fault {
            case .bridgeKill:
                bridge?.signal(SIGKILL)
                _ = bridge?.wait(timeout: 10)
                bridge = try start("coinmech-bridge", ["--config", "\(dir)/bridge.yaml"])
                verdict.bridgeKills += 1
            case .brokerKill:
                // The fleet away while events queue for its session, then the broker dies inside
                // its autosave interval: what it PUBACKed and queued is gone, and only the end-to-end
                // ack brings it back. (The pause is the fault's length, not a wait for anything.)
                consumer.kill()
                usleep(UInt32(random.next() % 1000 + 500) * 1000)
                broker.kill()
                do { try broker.start() } catch { throw ChaosError("\(error)") }
                consumer.brokerRestarted()
                verdict.brokerKills += 1
            case .brokerDown:
                broker.kill()
                try consumer.pump(for: brokerDown)
                do { try broker.start() } catch { throw ChaosError("\(error)") }
                consumer.brokerRestarted()
                verdict.brokerDownSeconds = brokerDown
            case .subscriberKill:
                consumer.kill()
                verdict.subscriberKills += 1
            case .daemonRestart:
                daemon?.signal(SIGTERM)
                guard daemon?.wait(timeout: 30) == 0 else { throw ChaosError("the daemon did not stop cleanly: see its log in \(dir)") }
                try startDaemon()
                verdict.daemonRestarts += 1
            case .sessionsCleared:
                do { try broker.clearSessions() } catch { throw ChaosError("\(error)") }
                consumer.brokerRestarted()
                verdict.sessionsCleared += 1
            }
            consumer.trace("# after \(fault.rawValue)")
            print("\(fault.rawValue): consumer holds \(consumer.stored.count) events, acked \(consumer.acked), \(consumer.copies) copies")
        }

        // The coins stop; every event the ledger has must reach the store.
        sim.signal(SIGTERM)
        let client = try CoinMechConnection(path: socket)
        let settle = Date().addingTimeInterval(30)
        while Date() < settle, (try? client.request(.status)["pending"]?.int) != 0 { try consumer.pump(for: 0.05) }
        guard sim.wait(timeout: 30) == 0 else { throw ChaosError("coinsim did not finish: see \(dir)/coinsim-1.log") }
        // Drained to the ledger as it is read for the comparison; the daemon may still add an
        // event (source_lost once coinsim has gone), so read again until it stands still.
        let ledgerFile = try Ledger(directory: "\(dir)/state")
        var events = try ledgerFile.events(since: 0, limit: 100_000_000)
        let drain = Date().addingTimeInterval(120)
        while Date() < drain {
            while consumer.acked < events.last?.seq ?? 0, Date() < drain { try consumer.pump(for: 0.2) }
            let again = try ledgerFile.events(since: 0, limit: 100_000_000)
            if again.count == events.count { break }
            events = again
        }
        _ = client
        verdict.events = events.count
        verdict.copies = consumer.copies
        // The faults must have cost something: copies beyond the events are the resends that
        // repaired them. None at all means the run proved nothing.
        verdict.resent = consumer.copies - consumer.stored.count
        let ledger = Dictionary(uniqueKeysWithValues: events.map { ($0.seq, $0) })
        for event in events {
            guard let copy = consumer.stored[event.seq] else {
                verdict.lost += 1
                print("LOST: seq \(event.seq) (\(event.kind))")
                continue
            }
            if copy.kind != event.kind || abs(copy.time - event.time) > 0.0005 {
                verdict.duplicatedAfterDedupe += 1
                print("DIFFERENT: seq \(event.seq) stored as \(copy.kind) at \(copy.time), the ledger has \(event.kind) at \(event.time)")
            }
        }
        for seq in consumer.stored.keys where ledger[seq] == nil {
            verdict.phantom += 1
            print("PHANTOM: seq \(seq) is not in the ledger")
        }
        verdict.duplicatedAfterDedupe += consumer.differing.count
        for seq in consumer.differing { print("DIFFERENT COPY: seq \(seq)") }
        verdict.outOfOrder = consumer.skips.count
        for skip in consumer.skips { print("OUT OF ORDER: subscriber run \(skip.run) got seq \(skip.got) after \(skip.after)") }
        return verdict
    }

    enum Fault: String {
        case bridgeKill = "bridge kill -9"
        case brokerKill = "broker kill -9"
        case brokerDown = "broker down"
        case subscriberKill = "subscriber kill -9"
        case daemonRestart = "daemon restart"
        case sessionsCleared = "broker sessions cleared"
    }

    private func startDaemon() throws {
        let child = try start("coinmechd", ["--config", "\(dir)/coinmechd.yaml", "--plugin-dir", bin])
        daemon = child
        let deadline = Date().addingTimeInterval(30)
        while (try? CoinMechConnection(path: socket)) == nil {
            guard child.isRunning else { throw ChaosError("the daemon exited during start-up: see \(child.stderrPath)") }
            guard Date() < deadline else { throw ChaosError("the daemon's socket did not appear in 30 s: see \(child.stderrPath)") }
            usleep(10_000)
        }
    }

    private func start(_ tool: String, _ arguments: [String]) throws -> ChildProcess {
        starts[tool, default: 0] += 1
        return try ChildProcess(path: "\(bin)/\(tool)", arguments, stderrPath: "\(dir)/\(tool)-\(starts[tool]!).log")
    }
}
