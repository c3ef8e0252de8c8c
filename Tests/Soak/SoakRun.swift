import CoinMechAudit
import CoinMechClient
import CoinMechHarness
import CoinMechLedger
import CoinSimCore
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// One soak in a scratch directory: coinsim in lockstep, coinmechd (killed and started again on
/// schedule), coinmech-bridge to a real mosquitto, and local clients; then the audit.
final class SoakRun {
    let bin: String
    let dir: String
    let coins: Int
    private var daemon: ChildProcess?
    private var starts: [String: Int] = [:]
    private var socket: String { "\(dir)/run/coinmechd.sock" }

    /// sanity isolated in a plugin host (the host's round trip and its supervisor soak too),
    /// the weight floor and coin-table in process.
    static let chain = """
        chain: [{plugin: sanity, isolation: process}, {plugin: weight-floor, config: {min_weight_g: 1.5}}, \
        {name: usd, plugin: coin-table, config: {currency: USD, tolerance: 0.04}}]
        """

    init(bin: String, seed: UInt64, coins: Int) throws {
        self.bin = bin
        self.coins = coins
        var template = Array("\(NSTemporaryDirectory())/coinmech-soak-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw SoakError("mkdtemp: \(String(cString: strerror(errno)))") }
        dir = String(cString: made)
        for tool in ["coinmechd", "coinsim", "coinmech-bridge", "coinmech-plugin-host", "libcoin-table.so", "libsanity.so"]
        where !FileManager.default.fileExists(atPath: "\(bin)/\(tool)") {
            throw SoakError("\(bin)/\(tool) not found: build first (swift build), or pass --bin")
        }
        guard FileManager.default.fileExists(atPath: "/usr/sbin/mosquitto") else { throw SoakError("/usr/sbin/mosquitto not found: scripts/bootstrap installs mosquitto") }
        try FixtureDaemon.configuration(source: "{kind: serial, device: mech, baud: 115200, currencies: [USD]}", chain: Self.chain)
            .write(toFile: "\(dir)/coinmechd.yaml", atomically: true, encoding: .utf8)
        // As fast as the protocol allows: each coin inserted once the one before is answered, on
        // a line that takes no time of its own (baud 0: a pty, not a wire at 115,200).
        try """
            name: soak
            seed: \(seed)
            coins: \(coins)
            baud: 0
            currency: USD
            mix: {quarter: 3, dime: 2, nickel: 1}
            others: {slug: 0.02}
            alloy: {noise: 0.01}
            faults: {bounce: 0.01, lost_confirmation: 0.02}
            """.write(toFile: "\(dir)/soak.yaml", atomically: true, encoding: .utf8)
    }

    func play(restartEvery: Int, sampleEvery: Int, reloadEvery: Int) throws -> SoakVerdict {
        let broker: MosquittoBroker
        do { broker = try MosquittoBroker(dir: dir) } catch { throw SoakError("\(error)") }
        try """
            cabinet: c-soak
            site: test-site
            socket: {path: \(socket)}
            state_dir: \(dir)/bridge
            mqtt: {host: 127.0.0.1, port: \(broker.port), keepalive_s: 5}
            """.write(toFile: "\(dir)/bridge.yaml", atomically: true, encoding: .utf8)
        var verdict = SoakVerdict()
        var bridge: ChildProcess?
        let clients = SoakClients(socket: socket)
        defer {
            clients.stop()
            for child in [bridge, daemon] { child?.signal(SIGKILL); _ = child?.wait(timeout: 10) }
            broker.kill()
        }
        let started = Date()
        let sim = try start("coinsim", ["--scenario", "\(dir)/soak.yaml", "--link", "\(dir)/mech", "--truth", "\(dir)/truth.json",
                                        "--lockstep", "--linger-ms", "5000", "--host-timeout", "60"])
        guard sim.readLine(timeout: 20) != nil else { throw SoakError("coinsim printed no device: see \(dir)/coinsim-1.log") }
        try startDaemon()
        bridge = try start("coinmech-bridge", ["--config", "\(dir)/bridge.yaml"])
        clients.start()

        // The readings of the daemons before this one, and the next moments of each kind.
        var before = 0
        var nextRestart = restartEvery, nextReload = reloadEvery
        var status: CoinMechConnection?
        while sim.isRunning {
            usleep(100_000)
            if status == nil { status = try? CoinMechConnection(path: socket) }
            guard let readings = (try? status?.request("status")["counters"]?["readings"]?.int).flatMap({ $0 }) else {
                status = nil
                continue
            }
            let done = before + Int(readings)
            let restartDue = done >= nextRestart && nextRestart < coins
            if done >= nextReload {
                // Not into a restart: its sample would count the new chain's plugin host starting
                // beside the old one (ten descriptors and a thread) as growth.
                if !restartDue {
                    daemon?.signal(SIGHUP)
                    verdict.reloads += 1
                }
                nextReload += reloadEvery
            }
            guard restartDue else { continue }
            if nextRestart % sampleEvery == 0 {
                let sample = try self.sample(coins: nextRestart)
                print(sample.line)
                verdict.samples.append(sample)
            }
            let last = Int((try? status?.request("status")["counters"]?["readings"]?.int).flatMap { $0 } ?? readings)
            daemon?.signal(SIGKILL)
            _ = daemon?.wait(timeout: 30)
            status = nil
            before += last
            verdict.kills += 1
            nextRestart += restartEvery
            try startDaemon()
            print("after \(done) coins: daemon killed and started again (\(verdict.kills) kills, \(verdict.reloads) reloads, "
                + "\(Int(Date().timeIntervalSince(started))) s)")
        }
        guard sim.wait(timeout: 60) == 0 else { throw SoakError("coinsim failed: see \(dir)/coinsim-1.log") }
        if coins % sampleEvery == 0, verdict.samples.last?.coins != coins {
            let sample = try self.sample(coins: coins)
            print(sample.line)
            verdict.samples.append(sample)
        }
        (verdict.subscriptions, verdict.events, verdict.controlRequests, verdict.sales) = clients.stop()
        bridge?.signal(SIGTERM)
        _ = bridge?.wait(timeout: 30)
        daemon?.signal(SIGTERM)
        guard daemon?.wait(timeout: 60) == 0 else { throw SoakError("the last daemon did not stop cleanly: see its log in \(dir)") }
        verdict.seconds = Date().timeIntervalSince(started)

        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        let truth = try decoder.decode(GroundTruth.self, from: Data(contentsOf: URL(fileURLWithPath: "\(dir)/truth.json")))
        let ledger = try Ledger(directory: "\(dir)/state")
        let events = try ledger.events(since: 0, limit: 100_000_000)
        verdict.audit = MoneyAudit(truths: [truth], events: events, boots: try ledger.boots(source: "serial"))
        // The kiosk's sales against the ledger, and the credit against the coins the mech stored.
        let stored = truth.coins.filter { $0.fate == "stored" }.reduce(Int64(0)) { $0 + ($1.valueMinor ?? 0) }
        verdict.creditProblems = try verdict.sales.audit(ledger: ledger, source: "serial", currency: "USD", storedValueMinor: stored, events: events)
        verdict.inserted = truth.sent.insertions
        verdict.deadlineMisses = truth.outcomes.deadlineMisses
        // The mech's answer time per sample's coins.
        for index in verdict.samples.indices {
            let upper = verdict.samples[index].coins
            let lower = index == 0 ? 0 : verdict.samples[index - 1].coins
            let times = truth.coins.filter { $0.insertion > lower && $0.insertion <= upper }.compactMap(\.latencyUs).sorted()
            verdict.samples[index].answerP99Microseconds = times.isEmpty ? 0 : Int(times[min(times.count - 1, times.count * 99 / 100)])
        }
        for sample in verdict.samples { print("\(sample.line), answer p99 \(sample.answerP99Microseconds) µs") }
        if !verdict.audit.isClean { print(verdict.audit.problems) }
        for problem in verdict.creditProblems { print("CREDIT: \(problem)") }
        for problem in SoakSample.drift(verdict.samples) { print("GROWTH: \(problem)") }
        return verdict
    }

    /// The running daemon's figures now.
    private func sample(coins: Int) throws -> SoakSample {
        guard let pid = daemon?.pid, let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else {
            throw SoakError("no daemon to sample after \(coins) coins")
        }
        func field(_ name: String) -> Int {
            status.split(separator: "\n").first { $0.hasPrefix(name + ":") }.flatMap { Int($0.split(whereSeparator: { $0 == " " || $0 == "\t" })[1]) } ?? -1
        }
        func kib(_ path: String) -> Int { (((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? NSNumber)?.intValue ?? 0) / 1024 }
        let descriptors = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd").count) ?? -1
        return SoakSample(coins: coins, rssKiB: field("VmRSS"), descriptors: descriptors, threads: field("Threads"),
                          ledgerKiB: kib("\(dir)/state/\(Ledger.fileName)"), walKiB: kib("\(dir)/state/\(Ledger.fileName)-wal"))
    }

    private func startDaemon() throws {
        let child = try start("coinmechd", ["--config", "\(dir)/coinmechd.yaml", "--plugin-dir", bin])
        daemon = child
        let deadline = Date().addingTimeInterval(30)
        while (try? CoinMechConnection(path: socket)) == nil {
            guard child.isRunning else { throw SoakError("the daemon exited during start-up: see \(child.stderrPath)") }
            guard Date() < deadline else { throw SoakError("the daemon's socket did not answer in 30 s: see \(child.stderrPath)") }
            usleep(20_000)
        }
    }

    private func start(_ tool: String, _ arguments: [String]) throws -> ChildProcess {
        starts[tool, default: 0] += 1
        return try ChildProcess(path: "\(bin)/\(tool)", arguments, stderrPath: "\(dir)/\(tool)-\(starts[tool]!).log")
    }
}

/// What the soak found.
struct SoakVerdict {
    var samples: [SoakSample] = []
    var audit = MoneyAudit(truths: [], events: [], boots: [:])
    var inserted = 0
    var deadlineMisses = 0
    var kills = 0
    var reloads = 0
    var subscriptions = 0
    var events = 0
    var controlRequests = 0
    var sales = SoakSales()
    var creditProblems: [String] = []
    var seconds = 0.0

    var isClean: Bool { audit.isClean && creditProblems.isEmpty && SoakSample.drift(samples).isEmpty && !samples.isEmpty }

    var json: String {
        let first = samples.dropFirst().first, last = samples.last
        return "{\"coins\": \(inserted), \"seconds\": \(Int(seconds)), \"kills\": \(kills), \"reloads\": \(reloads), \"subscriptions\": \(subscriptions), "
            + "\"events_to_subscribers\": \(events), \"control_requests\": \(controlRequests), \"deadline_misses\": \(deadlineMisses), "
            + "\"sales\": \(sales.sales.count), \"sales_approved\": \(sales.approved), \"refunds\": \(sales.refunds), "
            + "\"refused_short\": \(sales.refusedShort), \"credit_problems\": \(creditProblems.count), "
            + "\"lost\": \(audit.lost.count), \"doubled\": \(audit.doubled.count), \"phantom\": \(audit.phantom.count), \"wrong_value\": \(audit.wrongValue.count), "
            + "\"unconfirmed\": \(audit.unconfirmed.count), \"pending\": \(audit.pending.count), "
            + "\"rss_growth_kib\": \((last?.rssKiB ?? 0) - (first?.rssKiB ?? 0)), \"fd_growth\": \((last?.descriptors ?? 0) - (first?.descriptors ?? 0)), "
            + "\"thread_growth\": \((last?.threads ?? 0) - (first?.threads ?? 0)), \"flat\": \(SoakSample.drift(samples).isEmpty)}"
    }
}
