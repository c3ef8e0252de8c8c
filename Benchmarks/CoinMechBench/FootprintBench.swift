import ArgumentParser
import CoinMechLedger
import Foundation
import GRDB

#if canImport(Glibc)
import Glibc
#endif

/// `coinmech-bench footprint`: what the release daemon costs the machine it runs on — start-up
/// to READY (empty ledger, and one of a million events), resident memory idle and after
/// 10,000 coins, wake-ups per second while idle with systemd's watchdog on, and its threads —
/// against the footprint goals in docs/PERFORMANCE.md. The daemon runs as systemd would run it: a real datagram
/// `$NOTIFY_SOCKET` the bench binds and reads, and `$WATCHDOG_USEC` as the unit sets it.
struct FootprintBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "footprint",
        abstract: "Start-up to READY, resident memory, idle wake-ups and threads of the release coinmechd, against the goals.")

    @Option(help: "Directory of the coinmechd to measure (default: next to this executable).") var bin: String?
    @Option(help: "Directory of coinsim and the plugins (default: next to this executable).") var tools: String?
    @Option(help: "Start-up runs of each kind (empty ledger, large ledger), interleaved.") var runs = 5
    @Option(help: "Events in the large ledger.") var events = 1_000_000
    @Option(help: "Keep the large ledger in this directory and reuse it when it is there.") var ledgerCache: String?
    @Option(help: "Coins played (lockstep, unpaced) between the two idle measurements.") var coins = 10_000
    @Option(help: "Seconds of each idle measurement.") var idleSeconds = 10.0
    @Option(help: "$WATCHDOG_USEC given to the daemon (the unit's WatchdogSec=10s).") var watchdogUsec = 10_000_000
    @Flag(help: "Print one JSON object instead of a table.") var json = false

    static let goalStartupMs = 150.0
    static let goalRSSMiB = 20.0
    static let goalWakeupsPerSecond = 1.0

    func run() throws {
        let here = executableDirectory()
        let daemonDir = bin ?? here, toolDir = tools ?? here
        let work = NSTemporaryDirectory() + "coinmech-footprint-\(getpid())"
        try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: work) }

        // The large ledger, made once (SQL in one transaction: seconds, not minutes).
        let largeDir = ledgerCache ?? "\(work)/large"
        let largeEvents = try LargeLedger.prepare(directory: largeDir, events: events)

        // Start-up to READY, interleaved so a noisy spell lands on both kinds. A first start,
        // not counted, makes the plugins' private copies and warms the page cache, as any
        // start after the first install finds them.
        _ = try startOnce(daemonDir: daemonDir, toolDir: toolDir, work: work, stateDir: "\(work)/warm-up")
        var empty: [Double] = [], large: [Double] = []
        for run in 0..<runs {
            let fresh = "\(work)/empty-\(run)"
            empty.append(try startOnce(daemonDir: daemonDir, toolDir: toolDir, work: work, stateDir: fresh))
            try? FileManager.default.removeItem(atPath: fresh)
            large.append(try startOnce(daemonDir: daemonDir, toolDir: toolDir, work: work, stateDir: largeDir))
        }

        // Idle, 10,000 coins, idle again: one daemon, with coinsim on its serial line.
        let session = try idleSession(daemonDir: daemonDir, toolDir: toolDir, work: work)

        let result = FootprintResult(
            startup_ready_ms_empty: Spread(empty), startup_ready_ms_large: Spread(large), large_ledger_events: largeEvents,
            startup_with_mech_ready_ms: session.readyMs,
            rss_mib_idle: session.idle.rssMiB, rss_mib_after_coins: session.afterCoinsRSSMiB, rss_mib_idle_after_coins: session.idleAfter.rssMiB,
            rss_anon_mib_idle: session.idle.rssAnonMiB, rss_file_mib_idle: session.idle.rssFileMiB,
            wakeups_per_s_idle: session.idle.wakeupsPerSecond, wakeups_per_s_idle_after_coins: session.idleAfter.wakeupsPerSecond,
            involuntary_per_s_idle: session.idle.involuntaryPerSecond,
            wakeups_per_s_by_thread: session.idle.byThread, wakeups_per_s_by_thread_after_coins: session.idleAfter.byThread,
            watchdog_pings_per_s: session.idle.watchdogPingsPerSecond,
            threads_idle: session.idle.threads, thread_names_idle: session.idle.threadNames,
            threads_born_idle: session.idle.born + session.idleAfter.born, threads_died_idle: session.idle.died + session.idleAfter.died,
            threads_after_coins: session.idleAfter.threads, coins_decided: session.coinsDecided, coins_seconds: session.coinsSeconds,
            idle_seconds: idleSeconds, watchdog_usec: watchdogUsec,
            goal_startup_met: Spread(empty).max <= Self.goalStartupMs && Spread(large).max <= Self.goalStartupMs,
            goal_rss_met: session.idle.rssMiB <= Self.goalRSSMiB,
            goal_wakeups_met: session.idle.wakeupsPerSecond <= Self.goalWakeupsPerSecond
                && session.idleAfter.wakeupsPerSecond <= Self.goalWakeupsPerSecond)
        if json {
            print(String(decoding: try JSONEncoder.sorted.encode(result), as: UTF8.self))
            return
        }
        func met(_ ok: Bool) -> String { ok ? "met" : "NOT met" }
        func f(_ value: Double, _ digits: Int = 1) -> String { String(format: "%.\(digits)f", value) }
        func threads(_ figures: [String: Double]) -> String {
            figures.sorted { $0.value > $1.value }.map { "\($0.key) \(f($0.value, 2))" }.joined(separator: ", ")
        }
        print("""
            footprint bench: \(daemonDir)/coinmechd as systemd runs it (NOTIFY_SOCKET, WATCHDOG_USEC=\(watchdogUsec))
              start-up to READY, empty ledger        \(f(result.startup_ready_ms_empty.min))–\(f(result.startup_ready_ms_empty.max)) ms (median \(f(result.startup_ready_ms_empty.median)), \(runs) runs)   goal ≤ \(Int(Self.goalStartupMs)) ms
              start-up to READY, \(largeEvents) events  \(f(result.startup_ready_ms_large.min))–\(f(result.startup_ready_ms_large.max)) ms (median \(f(result.startup_ready_ms_large.median)))   goal ≤ \(Int(Self.goalStartupMs)) ms: \(met(result.goal_startup_met))
              start-up to READY, with coinsim         \(f(session.readyMs)) ms
              RSS idle                               \(f(result.rss_mib_idle)) MiB (anonymous \(f(result.rss_anon_mib_idle)), files \(f(result.rss_file_mib_idle)))   goal ≤ \(Int(Self.goalRSSMiB)) MiB: \(met(result.goal_rss_met))
              RSS after \(session.coinsDecided) coins                 \(f(result.rss_mib_after_coins)) MiB (\(f(session.coinsSeconds)) s); idle after them \(f(result.rss_mib_idle_after_coins)) MiB
              wake-ups idle (voluntary switches)     \(f(result.wakeups_per_s_idle, 2))/s; after the coins \(f(result.wakeups_per_s_idle_after_coins, 2))/s   goal ≤ 1/s: \(met(result.goal_wakeups_met))
                by thread                            \(threads(result.wakeups_per_s_by_thread))
                by thread, after the coins           \(threads(result.wakeups_per_s_by_thread_after_coins))
              watchdog pings                         \(f(result.watchdog_pings_per_s, 2))/s
              threads idle                           \(result.threads_idle) (\(result.thread_names_idle.joined(separator: ", "))); \(result.threads_after_coins) after the coins
              threads born / died while idle         \(result.threads_born_idle) / \(result.threads_died_idle)  (over 2 × \(f(idleSeconds, 0)) s)
            """)
    }

    // MARK: Runs

    /// The configuration every run uses: the demo's chain, the socket and directories in `work`.
    private func writeConfig(work: String, stateDir: String, name: String) throws -> String {
        // A directory of its own, as /etc/coinmech is: the reloader watches the configuration's
        // directory, and coinsim's files next to it would wake it.
        let directory = "\(work)/etc-\(name)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let path = "\(directory)/coinmechd.yaml"
        try """
            log_level: info
            source: {kind: serial, device: \(work)/mech, baud: 115200}
            state_dir: \(stateDir)
            runtime_dir: \(work)/run-\(name)
            cache_dir: \(work)/cache
            chain:
              - plugin: sanity
              - plugin: weight-floor
                config: {min_weight_g: 1.5}
              - plugin: repeat-guard
                config: {window_ms: 300, tolerance: 0.002, min_interval_ms: 15}
              - name: usd
                plugin: coin-table
                config: {currency: USD, tolerance: 0.04}
            """.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    /// Starts the daemon on `stateDir` (no mech on the line), times exec to READY, stops it.
    private func startOnce(daemonDir: String, toolDir: String, work: String, stateDir: String) throws -> Double {
        let config = try writeConfig(work: work, stateDir: stateDir, name: "startup")
        let notify = try NotifySocket(path: "\(work)/notify-startup")
        let daemon = try Daemon(daemonDir: daemonDir, toolDir: toolDir, config: config, notify: notify, watchdogUsec: watchdogUsec)
        defer { daemon.stop() }
        return try daemon.waitForReady()
    }

    struct Session {
        var readyMs: Double
        var idle: IdleFigures
        var afterCoinsRSSMiB: Double
        var idleAfter: IdleFigures
        var coinsDecided: Int
        var coinsSeconds: Double
    }

    private func idleSession(daemonDir: String, toolDir: String, work: String) throws -> Session {
        let config = try writeConfig(work: work, stateDir: "\(work)/session", name: "session")
        // One coin, then a quiet mech that stays on the line (its boot number grows per run, as a
        // power cycle would), then 10,000 coins as fast as the protocol allows, then quiet again.
        for (name, boot) in [("quiet1", 1), ("quiet2", 3)] {
            try "seed: \(boot)\ncoins: 1\nbaud: 0\nfirmware: {boot: \(boot)}\n".write(toFile: "\(work)/\(name).yaml", atomically: true, encoding: .utf8)
        }
        try "seed: 2\ncurrency: USD\nothers: {slug: 0.05}\nbaud: 0\nfirmware: {boot: 2}\n".write(toFile: "\(work)/busy.yaml", atomically: true, encoding: .utf8)

        let idleCap = Int((idleSeconds + 30) * 1000)
        let quiet = try Simulator(toolDir: toolDir, work: work, scenario: "quiet1", arguments: ["--linger-ms", "\(idleCap)"])
        defer { quiet.discard() }
        let notify = try NotifySocket(path: "\(work)/notify-session")
        let daemon = try Daemon(daemonDir: daemonDir, toolDir: toolDir, config: config, notify: notify, watchdogUsec: watchdogUsec)
        defer { daemon.stop() }
        let readyMs = try daemon.waitForReady()
        notify.drain(for: 3)  // the mech connects, its one coin is decided and confirmed
        let idle = try IdleFigures.observe(pid: daemon.pid, seconds: idleSeconds, notify: notify)
        quiet.discard()

        let started = Date()
        let busy = try Simulator(toolDir: toolDir, work: work, scenario: "busy",
                                 arguments: ["--coins", "\(coins)", "--lockstep", "--linger-ms", "300"])
        defer { busy.stop() }
        let truth = try busy.wait(seconds: 600)
        let coinsSeconds = Date().timeIntervalSince(started)
        let afterCoins = try ProcessStatus(pid: daemon.pid)

        let quietAgain = try Simulator(toolDir: toolDir, work: work, scenario: "quiet2", arguments: ["--linger-ms", "\(idleCap)"])
        defer { quietAgain.discard() }
        notify.drain(for: 3)
        let idleAfter = try IdleFigures.observe(pid: daemon.pid, seconds: idleSeconds, notify: notify)
        return Session(readyMs: readyMs, idle: idle, afterCoinsRSSMiB: afterCoins.rssMiB, idleAfter: idleAfter,
                       coinsDecided: truth, coinsSeconds: coinsSeconds)
    }
}

// MARK: Processes

/// The datagram socket systemd would listen on: the daemon's `sd_notify` messages arrive here.
final class NotifySocket {
    let path: String
    let fd: Int32

    init(path: String) throws {
        self.path = path
        unlink(path)
        fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw ValidationError("socket: errno \(errno)") }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(path.utf8)) }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard bound == 0 else { throw ValidationError("bind \(path): errno \(errno)") }
    }

    deinit {
        close(fd)
        unlink(path)
    }

    /// The next message, waiting at most `timeoutMs`.
    func receive(timeoutMs: Int32) -> String? {
        var waiting = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&waiting, 1, timeoutMs) > 0 else { return nil }
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = recv(fd, &buffer, buffer.count, 0)
        return count > 0 ? String(decoding: buffer[..<count], as: UTF8.self) : nil
    }

    /// Reads and drops messages for `seconds`.
    func drain(for seconds: Double) {
        let end = Date().addingTimeInterval(seconds)
        while Date() < end { _ = receive(timeoutMs: 100) }
    }
}

/// The daemon under test, reaped on every path.
final class Daemon {
    let process = Process()
    let notify: NotifySocket
    let started: UInt64

    var pid: Int32 { process.processIdentifier }

    init(daemonDir: String, toolDir: String, config: String, notify: NotifySocket, watchdogUsec: Int) throws {
        self.notify = notify
        process.executableURL = URL(fileURLWithPath: "\(daemonDir)/coinmechd")
        process.arguments = ["--config", config, "--plugin-dir", toolDir]
        var environment = ProcessInfo.processInfo.environment
        environment["NOTIFY_SOCKET"] = notify.path
        environment["WATCHDOG_USEC"] = "\(watchdogUsec)"
        environment.removeValue(forKey: "WATCHDOG_PID")
        process.environment = environment
        process.standardError = FileHandle(forWritingAtPath: "/dev/null")
        process.standardOutput = FileHandle(forWritingAtPath: "/dev/null")
        started = DispatchTime.now().uptimeNanoseconds
        try process.run()
    }

    /// Milliseconds from the spawn to `READY=1` on the notify socket.
    func waitForReady() throws -> Double {
        let deadline = started + 30_000_000_000
        while DispatchTime.now().uptimeNanoseconds < deadline {
            if let message = notify.receive(timeoutMs: 50), message.split(separator: "\n").contains("READY=1") {
                return Double(DispatchTime.now().uptimeNanoseconds - started) / 1e6
            }
            guard process.isRunning else { throw ValidationError("coinmechd exited \(process.terminationStatus) before READY") }
        }
        throw ValidationError("coinmechd sent no READY=1 within 30 s")
    }

    func stop() {
        if process.isRunning { process.terminate() }
        process.waitUntilExit()
    }
}

/// coinsim on the daemon's serial line (`<work>/mech`), reaped on every path.
final class Simulator {
    let process = Process()
    let truthPath: String
    let linkPath: String

    init(toolDir: String, work: String, scenario: String, arguments: [String]) throws {
        truthPath = "\(work)/\(scenario).truth.json"
        linkPath = "\(work)/mech"
        process.executableURL = URL(fileURLWithPath: "\(toolDir)/coinsim")
        process.arguments = ["--scenario", "\(work)/\(scenario).yaml", "--link", "\(work)/mech", "--truth", truthPath, "--host-timeout", "60"] + arguments
        process.standardOutput = FileHandle(forWritingAtPath: "/dev/null")
        process.standardError = FileHandle(forWritingAtPath: "/dev/null")
        try process.run()
        // The daemon opens the link: wait for coinsim to make it.
        let end = Date().addingTimeInterval(10)
        while (try? FileManager.default.destinationOfSymbolicLink(atPath: "\(work)/mech")) == nil, Date() < end { usleep(10_000) }
    }

    /// Waits for the end of the scenario; returns how many readings the host answered.
    func wait(seconds: Double) throws -> Int {
        let end = Date().addingTimeInterval(seconds)
        while process.isRunning, Date() < end { usleep(20_000) }
        guard !process.isRunning else { throw ValidationError("coinsim still running after \(Int(seconds)) s") }
        guard process.terminationStatus == 0 else { throw ValidationError("coinsim exited \(process.terminationStatus)") }
        let truth = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: truthPath))) as? [String: Any]
        let latency = truth?["latency_us"] as? [String: Any]
        return latency?["count"] as? Int ?? 0
    }

    func stop() {
        if process.isRunning { process.terminate() }
        process.waitUntilExit()
    }

    /// A quiet mech has no truth worth waiting for: SIGTERM would let it finish its linger
    /// (seconds, by design), so it is killed and its link removed for the next one to make.
    func discard() {
        guard process.isRunning else { return }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        try? FileManager.default.removeItem(atPath: linkPath)
    }
}

// MARK: /proc

/// A process's memory and threads from /proc.
struct ProcessStatus {
    var rssKiB = 0, rssAnonKiB = 0, rssFileKiB = 0
    var rssMiB: Double { Double(rssKiB) / 1024 }

    init(pid: Int32) throws {
        let text = try String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)
        for line in text.split(separator: "\n") {
            let parts = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
            guard parts.count >= 2, let value = Int(parts[1]) else { continue }
            switch parts[0] {
            case "VmRSS:": rssKiB = value
            case "RssAnon:": rssAnonKiB = value
            case "RssFile:": rssFileKiB = value
            default: break
            }
        }
    }
}

/// One thread's name and context switches.
struct ThreadSample {
    var name: String
    var voluntary: Int
    var involuntary: Int

    /// Every thread of `pid` now.
    static func all(pid: Int32) -> [Int32: ThreadSample] {
        var samples: [Int32: ThreadSample] = [:]
        for entry in (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? [] {
            guard let tid = Int32(entry), let text = try? String(contentsOfFile: "/proc/\(pid)/task/\(entry)/status", encoding: .utf8) else { continue }
            var sample = ThreadSample(name: "?", voluntary: 0, involuntary: 0)
            for line in text.split(separator: "\n") {
                if line.hasPrefix("Name:") { sample.name = line.dropFirst(5).trimmingCharacters(in: .whitespaces) }
                if line.hasPrefix("voluntary_ctxt_switches:") { sample.voluntary = Int(line.split(separator: "\t").last ?? "") ?? 0 }
                if line.hasPrefix("nonvoluntary_ctxt_switches:") { sample.involuntary = Int(line.split(separator: "\t").last ?? "") ?? 0 }
            }
            samples[tid] = sample
        }
        return samples
    }
}

/// Wake-ups, threads and memory of an idle daemon over a window, sampled every 100 ms (the
/// sampling wakes the bench, not the daemon). A thread born in the window counts from zero;
/// one that dies counts up to its last sample.
struct IdleFigures {
    var wakeupsPerSecond = 0.0
    var involuntaryPerSecond = 0.0
    var byThread: [String: Double] = [:]
    var threads = 0
    var threadNames: [String] = []
    var born = 0
    var died = 0
    var watchdogPingsPerSecond = 0.0
    var rssMiB = 0.0, rssAnonMiB = 0.0, rssFileMiB = 0.0

    static func observe(pid: Int32, seconds: Double, notify: NotifySocket) throws -> IdleFigures {
        let first = ThreadSample.all(pid: pid)
        var last = first
        var born = Set<Int32>(), died = Set<Int32>()
        var pings = 0
        let start = DispatchTime.now().uptimeNanoseconds
        let end = start + UInt64(seconds * 1e9)
        while DispatchTime.now().uptimeNanoseconds < end {
            if let message = notify.receive(timeoutMs: 100), message.contains("WATCHDOG=1") { pings += 1 }
            let now = ThreadSample.all(pid: pid)
            for (tid, sample) in now {
                if first[tid] == nil { born.insert(tid) }
                last[tid] = sample
            }
            for tid in last.keys where now[tid] == nil { died.insert(tid) }
        }
        let elapsed = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        var figures = IdleFigures()
        var voluntary = 0, involuntary = 0
        var byName: [String: Int] = [:]
        for (tid, sample) in last {
            let switches = sample.voluntary - (first[tid]?.voluntary ?? 0)
            voluntary += switches
            involuntary += sample.involuntary - (first[tid]?.involuntary ?? 0)
            byName[sample.name, default: 0] += switches
        }
        figures.wakeupsPerSecond = Double(voluntary) / elapsed
        figures.involuntaryPerSecond = Double(involuntary) / elapsed
        figures.byThread = byName.filter { $0.value > 0 }.mapValues { Double($0) / elapsed }
        let alive = ThreadSample.all(pid: pid)
        figures.threads = alive.count
        figures.threadNames = alive.values.map(\.name).sorted()
        figures.born = born.count
        figures.died = died.count
        figures.watchdogPingsPerSecond = Double(pings) / elapsed
        let status = try ProcessStatus(pid: pid)
        figures.rssMiB = status.rssMiB
        figures.rssAnonMiB = Double(status.rssAnonKiB) / 1024
        figures.rssFileMiB = Double(status.rssFileKiB) / 1024
        return figures
    }
}

// MARK: The large ledger

/// A ledger of about `events` events as months of trade leave it: decisions (one in ten a
/// rejection) each followed by its `coin`, on one source and epoch, with totals to match.
enum LargeLedger {
    static func prepare(directory: String, events: Int) throws -> Int {
        let path = "\(directory)/\(Ledger.fileName)"
        if FileManager.default.fileExists(atPath: path), let count = try? count(path), count >= events { return count }
        try? FileManager.default.removeItem(atPath: directory)
        // The daemon's own schema, through its migrations.
        _ = try Ledger(directory: directory)
        let queue = try DatabaseQueue(path: path)
        // 9 accepts with a coin each and 1 rejection: 19 events per 10 decisions.
        let decisions = events * 10 / 19
        try queue.writeWithoutTransaction { db in
            try db.execute(sql: "PRAGMA synchronous = OFF")
            try db.inTransaction {
                try db.execute(sql: """
                    WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?)
                    INSERT INTO events (seq, time, kind, source, epoch, device_seq, diameter_mm, weight_g, thickness_mm,
                                        verdict, currency, denomination, value_minor, link, reason, message, chain_generation, state)
                    SELECT 2 * i, 1.7e9 + i * 5, 'decision', 'serial', 1, i, 24.26 + (i % 7) * 0.01, 5.67, 1.75,
                           CASE WHEN i % 10 = 0 THEN 'reject' ELSE 'accept' END,
                           CASE WHEN i % 10 = 0 THEN NULL ELSE 'USD' END,
                           CASE WHEN i % 10 = 0 THEN NULL ELSE 'quarter' END,
                           CASE WHEN i % 10 = 0 THEN NULL ELSE 25 END,
                           CASE WHEN i % 10 = 0 THEN 'unrecognized' ELSE 'usd' END,
                           CASE WHEN i % 10 = 0 THEN 'unrecognized' END,
                           CASE WHEN i % 10 = 0 THEN 'no link recognised the coin' END,
                           1,
                           CASE WHEN i % 10 = 0 THEN NULL ELSE 'credited' END
                    FROM n
                    """, arguments: [decisions])
                try db.execute(sql: """
                    INSERT INTO events (seq, time, kind, source, epoch, device_seq, diameter_mm, weight_g, thickness_mm,
                                        currency, denomination, value_minor, link, chain_generation, ref_seq)
                    SELECT seq + 1, time + 0.12, 'coin', source, epoch, device_seq, diameter_mm, weight_g, thickness_mm,
                           currency, denomination, value_minor, link, chain_generation, seq
                    FROM events WHERE kind = 'decision' AND verdict = 'accept'
                    """)
                let credited = decisions - decisions / 10
                try db.execute(sql: """
                    INSERT INTO sources (source, epoch) VALUES ('serial', 1) ON CONFLICT DO NOTHING;
                    INSERT INTO epochs (source, epoch, boot) VALUES ('serial', 1, 1) ON CONFLICT DO NOTHING;
                    INSERT INTO meta (key, value) VALUES ('chain_generation', 1) ON CONFLICT (key) DO UPDATE SET value = 1;
                    INSERT INTO totals (period, currency, denomination, count, value_minor, weight_g)
                        VALUES ('lifetime', 'USD', 'quarter', \(credited), \(credited * 25), \(Double(credited) * 5.67))
                        ON CONFLICT DO NOTHING;
                    """)
                return .commit
            }
            try db.execute(sql: "PRAGMA wal_checkpoint(TRUNCATE)")
        }
        return try count(path)
    }

    static func count(_ path: String) throws -> Int {
        try DatabaseQueue(path: path).read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM events") ?? 0 }
    }
}

struct Spread: Encodable {
    let min: Double, median: Double, max: Double

    init(_ values: [Double]) {
        let sorted = values.sorted()
        min = sorted.first ?? 0
        max = sorted.last ?? 0
        median = sorted.isEmpty ? 0 : sorted[sorted.count / 2]
    }
}

struct FootprintResult: Encodable {
    let startup_ready_ms_empty: Spread
    let startup_ready_ms_large: Spread
    let large_ledger_events: Int
    let startup_with_mech_ready_ms: Double
    let rss_mib_idle: Double
    let rss_mib_after_coins: Double
    let rss_mib_idle_after_coins: Double
    let rss_anon_mib_idle: Double
    let rss_file_mib_idle: Double
    let wakeups_per_s_idle: Double
    let wakeups_per_s_idle_after_coins: Double
    let involuntary_per_s_idle: Double
    let wakeups_per_s_by_thread: [String: Double]
    let wakeups_per_s_by_thread_after_coins: [String: Double]
    let watchdog_pings_per_s: Double
    let threads_idle: Int
    let thread_names_idle: [String]
    let threads_born_idle: Int
    let threads_died_idle: Int
    let threads_after_coins: Int
    let coins_decided: Int
    let coins_seconds: Double
    let idle_seconds: Double
    let watchdog_usec: Int
    let goal_startup_met: Bool
    let goal_rss_met: Bool
    let goal_wakeups_met: Bool
}
