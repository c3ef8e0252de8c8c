import ArgumentParser
import CoinMechHarness
import CoinSimCore
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// `coinmech-bench e2e`: the release daemon against coinsim, latency seen by the device,
/// compared in the same run with the floor: a pty round trip plus one 4 KiB write made durable
/// with fdatasync on the ledger's filesystem, the sync every commit of the daemon makes.
struct E2EBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "e2e",
        abstract: "Decision latency at the device: 20 coins/s steady, then a 1,000-reading burst, against the pty+fdatasync floor.")

    @Option(help: "Seconds of steady traffic at --rate.") var seconds = 30.0
    @Option(help: "Steady rate, coins per second.") var rate = 20.0
    @Option(help: "Readings in the burst (each sent as soon as the previous is answered).") var burst = 1000
    @Option(help: "Paced floor samples (taken at --rate, before the back-to-back ones).") var floorPaced = 300
    @Flag(help: "Print one JSON object instead of a table.") var json = false
    @Flag(help: "Count instructions per reading under valgrind's callgrind instead (stable on a noisy machine).")
    var callgrind = false

    func run() throws {
        let bin = executableDirectory()
        if callgrind { return try countInstructions(bin: bin) }
        let dir = NSTemporaryDirectory() + "coinmech-e2e-\(getpid())"
        try FileManager.default.createDirectory(atPath: "\(dir)/state", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try Self.daemonConfiguration(source: "{kind: serial, device: mech, baud: 115200}")
            .write(toFile: "\(dir)/coinmechd.yaml", atomically: true, encoding: .utf8)
        // Unpaced (baud 0): the latency is the daemon's, from the reading's arrival to its answer,
        // comparable with the floor's pty round trip.
        try "seed: 3\ncurrency: USD\nothers: {slug: 0.05}\nbaud: 0\n".write(toFile: "\(dir)/mix.yaml", atomically: true, encoding: .utf8)
        try "seed: 4\ncurrency: USD\nothers: {slug: 0.05}\nbaud: 0\nfirmware: {boot: 2}\n".write(toFile: "\(dir)/burst.yaml", atomically: true, encoding: .utf8)

        // The references the answer is held to, on this machine in this run: gpsd's event on the
        // same kind of pty → client path, and one fsync of a 4 KiB write on the ledger's filesystem.
        let gpsdSamples = try GPSDReference.measure(samples: min(300, Int(seconds * rate)), interval: 1 / rate)?.sorted()
        // The fsync paced as the readings are: an fsync after 10 ms idle costs this machine
        // about 2.5 times one right after another (the disk's and the CPU's idle wake-ups), and
        // the answer's own sync is paced. Both are shown; the target uses the paced one.
        let fsyncSamples = Self.measureFsync(directory: "\(dir)/state", count: min(300, Int(seconds * rate)), interval: 1 / rate).sorted()
        let fsyncBackToBack = Self.measureFsync(directory: "\(dir)/state", count: 300, interval: 0).sorted()
        let floorSamples = try measureFloor(paced: min(floorPaced, Int(seconds * rate)), interval: 1 / rate, hot: burst, directory: "\(dir)/state")

        let daemon = Process()
        daemon.executableURL = URL(fileURLWithPath: "\(bin)/coinmechd")
        daemon.arguments = ["--config", "\(dir)/coinmechd.yaml", "--plugin-dir", bin]
        daemon.standardError = FileHandle(forWritingAtPath: "/dev/null")
        try daemon.run()
        defer {
            daemon.terminate()
            daemon.waitUntilExit()
        }
        // A subscribed client, as a kiosk application has: every committed event goes to it.
        let watcher = try subscribe(bin: bin, socket: "\(dir)/run/coinmechd.sock")
        defer {
            watcher.terminate()
            watcher.waitUntilExit()
        }
        let wakeupsBefore = ThreadWakeups(pid: daemon.processIdentifier)
        let steady = try simulate(bin: bin, dir: dir, name: "steady", arguments: ["--coins", "\(Int(seconds * rate))", "--rate", "\(rate)"])
        // Per coin: its reading and, for an accepted one, the mech's confirmation wake the
        // deciding thread; with one subscribed client nothing else need wake.
        let wakeups = ThreadWakeups.perUnit(from: wakeupsBefore, to: ThreadWakeups(pid: daemon.processIdentifier), units: steady.sent.insertions)
        let fast = try simulate(bin: bin, dir: dir, name: "burst", scenario: "burst.yaml", arguments: ["--coins", "\(burst)", "--lockstep"])

        let floorPacedSamples = Array(floorSamples.prefix(min(floorPaced, Int(seconds * rate)))).sorted()
        let floorHotSamples = Array(floorSamples.dropFirst(floorPacedSamples.count)).sorted()
        let floor = floorSamples.sorted()
        let all = (steady.coins + fast.coins).compactMap(\.latencyUs).sorted()
        let p50 = percentile(all, 0.50), p99 = percentile(all, 0.99)
        let result = E2EResult(
            e2e_p50_us: p50, e2e_p99_us: p99, e2e_max_us: all.last ?? 0, floor_p50_us: percentile(floor, 0.50),
            floor_p99_us: percentile(floor, 0.99), p99_over_floor: Double(p99) / Double(max(1, percentile(floor, 0.99))),
            deadline_misses: steady.outcomes.deadlineMisses + fast.outcomes.deadlineMisses,
            steady_p99_us: steady.latencyUs.p99, burst_p99_us: fast.latencyUs.p99,
            burst_readings_per_s: Double(fast.sent.readings) / max(0.001, fast.durationS), readings: all.count,
            steady_wakeups_per_coin: wakeups,
            steady_p50_us: steady.latencyUs.p50, gpsd_event_p50_us: gpsdSamples.map { percentile($0, 0.5) },
            fsync_p50_us: percentile(fsyncSamples, 0.5), fsync_back_to_back_p50_us: percentile(fsyncBackToBack, 0.5))
        if json {
            print(String(decoding: try JSONEncoder.sorted.encode(result), as: UTF8.self))
        } else {
            print("""
                e2e bench: release coinmechd against coinsim; latency from the reading's arrival at the host to its answer at the mech
                  phase                              readings    p50 µs    p99 µs    max µs   misses
                  steady \(rate)/s for \(seconds) s      \(pad(steady.latencyUs.count, 8))  \(pad(steady.latencyUs.p50))  \(pad(steady.latencyUs.p99))  \(pad(steady.latencyUs.max))   \(steady.outcomes.deadlineMisses)
                  burst (lockstep, \(Int(result.burst_readings_per_s))/s)          \(pad(fast.latencyUs.count, 8))  \(pad(fast.latencyUs.p50))  \(pad(fast.latencyUs.p99))  \(pad(fast.latencyUs.max))   \(fast.outcomes.deadlineMisses)
                  all                                \(pad(all.count, 8))  \(pad(p50))  \(pad(p99))  \(pad(result.e2e_max_us))   \(result.deadline_misses)   (target 0)
                  floor, paced at \(rate)/s              \(pad(floorPacedSamples.count, 8))  \(pad(percentile(floorPacedSamples, 0.5)))  \(pad(percentile(floorPacedSamples, 0.99)))
                  floor, back to back                \(pad(floorHotSamples.count, 8))  \(pad(percentile(floorHotSamples, 0.5)))  \(pad(percentile(floorHotSamples, 0.99)))
                  floor, all (pty + fdatasync) \(pad(floor.count, 8))  \(pad(result.floor_p50_us))  \(pad(result.floor_p99_us))
                  p99 over floor: \(String(format: "%.2f", result.p99_over_floor))   (target ≤ 1.5)
                answer p50 (steady) \(steady.latencyUs.p50) µs against gpsd's event p50 \(gpsdSamples.map { "\(percentile($0, 0.5))" } ?? "(gpsd not installed)") µs + one fsync p50 \(percentile(fsyncSamples, 0.5)) µs paced as the readings (\(percentile(fsyncBackToBack, 0.5)) µs back to back) \
                = \(gpsdSamples.map { "\(percentile($0, 0.5) + percentile(fsyncSamples, 0.5))" } ?? "?") µs   (target: answer ≤ that)
                wake-ups per coin in the steady phase, by daemon thread (voluntary context switches):
                  \(wakeups.sorted { $0.key < $1.key }.map { "\($0.key) \(String(format: "%.2f", $0.value))" }.joined(separator: ", "))
                """)
        }
    }

    /// The benched daemon's configuration: chain `sanity → weight-floor → coin-table USD`.
    static func daemonConfiguration(source: String) -> String {
        """
        log_level: warning
        source: \(source)
        state_dir: state
        runtime_dir: run
        cache_dir: cache
        \(FixtureChains.usd)
        """
    }

    /// `coinctl watch` on the daemon's socket, once the socket is there (10 s at most).
    private func subscribe(bin: String, socket: String) throws -> Process {
        let deadline = Date().addingTimeInterval(10)
        while !FileManager.default.fileExists(atPath: socket) {
            guard Date() < deadline else { throw ValidationError("coinmechd made no socket at \(socket) within 10 s") }
            usleep(20_000)
        }
        let watch = Process()
        watch.executableURL = URL(fileURLWithPath: "\(bin)/coinctl")
        watch.arguments = ["watch", "--socket", socket]
        watch.standardOutput = FileHandle(forWritingAtPath: "/dev/null")
        watch.standardError = FileHandle(forWritingAtPath: "/dev/null")
        try watch.run()
        return watch
    }

    private func simulate(bin: String, dir: String, name: String, scenario: String = "mix.yaml", arguments: [String]) throws -> GroundTruth {
        let sim = Process()
        sim.executableURL = URL(fileURLWithPath: "\(bin)/coinsim")
        sim.arguments = ["--scenario", "\(dir)/\(scenario)", "--linger-ms", "300", "--link", "\(dir)/mech", "--truth", "\(dir)/\(name).json", "--host-timeout", "30"] + arguments
        sim.standardOutput = FileHandle(forWritingAtPath: "/dev/null")
        sim.standardError = FileHandle(forWritingAtPath: "/dev/null")
        try sim.run()
        sim.waitUntilExit()
        guard sim.terminationStatus == 0 else { throw ValidationError("coinsim \(name) exited \(sim.terminationStatus)") }
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        return try decoder.decode(GroundTruth.self, from: Data(contentsOf: URL(fileURLWithPath: "\(dir)/\(name).json")))
    }

    /// µs per reading of the least any design must do: a sentence from the device to the host
    /// over a pty, a 4 KiB write made durable on the ledger's filesystem with fdatasync (what
    /// SQLite calls on the WAL at each commit under `synchronous=FULL`), the answer back, and a
    /// second synced write for the coin's settlement (the daemon commits it when the mech
    /// confirms the coin), with the
    /// device and the host on two threads that sleep in poll as the real ones do. Paced like
    /// the e2e run: `paced` readings `interval` apart, then `hot` back to back.
    private func measureFloor(paced: Int, interval: Double, hot: Int, directory: String) throws -> [Int] {
        var master: Int32 = -1, device: Int32 = -1
        guard openpty(&master, &device, nil, nil, nil) == 0 else { throw ValidationError("openpty failed") }
        var settings = termios()
        tcgetattr(device, &settings)
        cfmakeraw(&settings)
        tcsetattr(device, TCSANOW, &settings)
        let file = open("\(directory)/fsync-probe", O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        let total = paced + hot
        let host = Thread { [device] in
            // The host: wait for a sentence, make its decision durable, answer; then make the
            // coin's settlement durable, as the daemon does when the mech confirms the coin
            // (two synced commits a coin, one of them before the answer).
            let page = [UInt8](repeating: 0x55, count: 4096), answer = Array("$CMD,1,A*35\r\n".utf8)
            var buffer = [UInt8](repeating: 0, count: 256)
            for _ in 0..<total {
                Self.readLine(device, &buffer)
                _ = pwrite(file, page, page.count, 0)
                fdatasync(file)
                _ = write(device, answer, answer.count)
                _ = pwrite(file, page, page.count, 4096)
                fdatasync(file)
            }
        }
        host.start()
        let reading = Array("$CMR,1,24.260,5.670,1.750*44\r\n".utf8)
        var buffer = [UInt8](repeating: 0, count: 256)
        var results: [Int] = []
        results.reserveCapacity(total)
        for index in 0..<total {
            if index < paced { usleep(useconds_t(interval * 1e6)) }
            let start = DispatchTime.now().uptimeNanoseconds
            _ = write(master, reading, reading.count)
            Self.readLine(master, &buffer)
            results.append(Int((DispatchTime.now().uptimeNanoseconds - start) / 1000))
        }
        close(file)
        close(master)
        close(device)
        return results
    }

    /// µs of one 4 KiB write made durable with fdatasync in `directory`, `count` times, each
    /// after `interval` seconds idle (0: one right after another).
    static func measureFsync(directory: String, count: Int, interval: Double) -> [Int] {
        let file = open("\(directory)/fsync-reference", O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        defer {
            close(file)
            unlink("\(directory)/fsync-reference")
        }
        let page = [UInt8](repeating: 0x55, count: 4096)
        return (0..<count).map { _ in
            if interval > 0 { usleep(useconds_t(interval * 1e6)) }
            let start = DispatchTime.now().uptimeNanoseconds
            _ = pwrite(file, page, page.count, 0)
            fdatasync(file)
            return Int((DispatchTime.now().uptimeNanoseconds - start) / 1000)
        }
    }

    /// Blocks in poll until a whole line has arrived.
    private static func readLine(_ fd: Int32, _ buffer: inout [UInt8]) {
        var got = 0
        while got == 0 || buffer[got - 1] != UInt8(ascii: "\n") {
            var waiting = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            _ = poll(&waiting, 1, 1000)
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress! + got, $0.count - got) }
            if n <= 0 { return }
            got += n
        }
    }


}

extension E2EBench {
    /// The daemon and the plugins without debug information: valgrind 3.19 cannot read the
    /// DWARF 5 the toolchain writes, and counts instructions the same without it.
    private func strippedCopies(from bin: String, into directory: String) throws -> String {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let plugins = try FileManager.default.contentsOfDirectory(atPath: bin).filter { $0.hasPrefix("lib") && $0.hasSuffix(".so") }
        for name in ["coinmechd"] + plugins {
            let strip = Process()
            strip.executableURL = URL(fileURLWithPath: "/usr/bin/objcopy")
            strip.arguments = ["--strip-debug", "\(bin)/\(name)", "\(directory)/\(name)"]
            try strip.run()
            strip.waitUntilExit()
            guard strip.terminationStatus == 0 else { throw ValidationError("objcopy --strip-debug \(bin)/\(name) failed") }
        }
        return directory
    }

    /// Instructions the daemon executes per reading (all its threads), as callgrind counts them:
    /// two runs under valgrind that differ only in how many readings they decide, so start-up,
    /// plugin loading and shutdown cancel out. The mech's deadline is 5 s in both, so every
    /// reading takes the normal path although valgrind is ~50 times slower.
    func countInstructions(bin: String) throws {
        let small = 200, large = 1200
        let dir = NSTemporaryDirectory() + "coinmech-callgrind-\(getpid())"
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let stripped = try strippedCopies(from: bin, into: "\(dir)/bin")
        var totals: [Int: Int] = [:]
        for readings in [small, large] {
            let run = "\(dir)/\(readings)"
            try FileManager.default.createDirectory(atPath: "\(run)/state", withIntermediateDirectories: true)
            try Self.daemonConfiguration(source: "{kind: serial, device: mech, baud: 115200, deadline_ms: 5000}")
                .write(toFile: "\(run)/coinmechd.yaml", atomically: true, encoding: .utf8)
            try "seed: 5\ncurrency: USD\nothers: {slug: 0.05}\nbaud: 0\ndeadline_ms: 5000\n"
                .write(toFile: "\(run)/mix.yaml", atomically: true, encoding: .utf8)
            let daemon = Process()
            daemon.executableURL = URL(fileURLWithPath: "/usr/bin/valgrind")
            daemon.arguments = ["--tool=callgrind", "--callgrind-out-file=\(run)/callgrind.out", "--dump-instr=no",
                                "\(stripped)/coinmechd", "--config", "\(run)/coinmechd.yaml", "--plugin-dir", stripped]
            _ = FileManager.default.createFile(atPath: "\(run)/valgrind.log", contents: nil)
            daemon.standardError = FileHandle(forWritingAtPath: "\(run)/valgrind.log")
            try daemon.run()
            let started = Date()
            while !FileManager.default.fileExists(atPath: "\(run)/run/coinmechd.sock") {
                guard daemon.isRunning, Date().timeIntervalSince(started) < 120 else {
                    if daemon.isRunning { daemon.terminate() }
                    let log = (try? String(contentsOfFile: "\(run)/valgrind.log", encoding: .utf8)) ?? ""
                    throw ValidationError("coinmechd under valgrind did not open its socket in 120 s (is valgrind installed?):\n\(log.suffix(2000))")
                }
                usleep(50_000)
            }
            let truth = try simulate(bin: bin, dir: run, name: "truth", arguments: ["--coins", "\(readings)", "--lockstep"])
            daemon.terminate()
            daemon.waitUntilExit()
            guard truth.outcomes.deadlineMisses == 0 else { throw ValidationError("\(truth.outcomes.deadlineMisses) deadline misses under valgrind: the counts would mix paths") }
            let out = try String(contentsOfFile: "\(run)/callgrind.out", encoding: .utf8)
            guard let line = out.split(separator: "\n").first(where: { $0.hasPrefix("totals:") || $0.hasPrefix("summary:") }),
                  let count = Int(line.split(separator: " ").last ?? "") else { throw ValidationError("no totals in \(run)/callgrind.out") }
            totals[readings] = count
        }
        let perReading = (totals[large]! - totals[small]!) / (large - small)
        if json {
            print("{\"instructions_per_reading\":\(perReading),\"readings\":[\(small),\(large)],\"instructions\":[\(totals[small]!),\(totals[large]!)]}")
        } else {
            print("""
                callgrind: coinmechd executed \(totals[small]!) instructions for \(small) readings and \(totals[large]!) for \(large)
                  instructions per reading (all threads, start-up and shutdown cancelled out): \(perReading)
                """)
        }
    }
}

struct E2EResult: Encodable {
    let e2e_p50_us: Int
    let e2e_p99_us: Int
    let e2e_max_us: Int
    let floor_p50_us: Int
    let floor_p99_us: Int
    let p99_over_floor: Double
    let deadline_misses: Int
    let steady_p99_us: Int
    let burst_p99_us: Int
    let burst_readings_per_s: Double
    let readings: Int
    let steady_wakeups_per_coin: [String: Double]
    let steady_p50_us: Int
    let gpsd_event_p50_us: Int?
    /// Paced at the steady phase's rate, as the answer's sync is.
    let fsync_p50_us: Int
    let fsync_back_to_back_p50_us: Int
}
