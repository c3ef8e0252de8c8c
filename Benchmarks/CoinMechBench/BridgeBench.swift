import ArgumentParser
import CoinMechClient
import CoinMechHarness
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// `coinmech-bench bridge`: the fleet feed through a local mosquitto. The lag from the ledger's
/// commit to a subscriber's receipt at a steady coin rate, and the rate at which a fresh bridge
/// sends a ledger's backlog (a cabinet back after a week offline), with the daemon's own rate of
/// writing those events beside it.
struct BridgeBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bridge",
        abstract: "Fleet bridge: lag p50/p99 from commit to subscriber at 20 coins/s, and events per second sending a backlog.")

    @Option(help: "Seconds of steady traffic at --rate.") var seconds = 20.0
    @Option(help: "Steady rate, coins per second.") var rate = 20.0
    @Option(help: "Coins played into the ledger with no bridge running, then sent as a backlog.") var backlog = 2000
    @Flag(help: "Print one JSON object instead of a table.") var json = false

    func run() throws {
        let bin = executableDirectory()
        var template = Array("\(NSTemporaryDirectory())/coinmech-bench-bridge-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw ValidationError("mkdtemp failed") }
        let dir = String(cString: made)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        for tool in ["/usr/sbin/mosquitto", "/usr/bin/mosquitto_sub"] where !FileManager.default.fileExists(atPath: tool) {
            throw ValidationError("\(tool) not found: scripts/bootstrap installs mosquitto and mosquitto-clients")
        }
        let port = try freePort()
        try "listener \(port) 127.0.0.1\nallow_anonymous true\nmax_queued_messages 0\nuser root\n".write(toFile: "\(dir)/mosquitto.conf", atomically: true, encoding: .utf8)
        let broker = try ChildProcess(path: "/usr/sbin/mosquitto", ["-c", "\(dir)/mosquitto.conf"], stderrPath: "\(dir)/mosquitto.log")
        try waitFor("mosquitto listening on \(port)") { broker.isRunning && accepts(port) }
        try E2EBench.daemonConfiguration(source: "{kind: serial, device: mech, baud: 115200}")
            .write(toFile: "\(dir)/coinmechd.yaml", atomically: true, encoding: .utf8)
        let daemon = try ChildProcess(path: "\(bin)/coinmechd", ["--config", "\(dir)/coinmechd.yaml", "--plugin-dir", bin], stderrPath: "\(dir)/coinmechd.log")
        defer {
            for child in [daemon, broker] { child.signal(SIGTERM); _ = child.wait(timeout: 20) }
        }
        // Acks off: the lag measured is the publish path's; with acks the path is the same
        // while the window has room.
        func bridgeConfig(_ name: String) throws -> String {
            try """
                cabinet: bench
                site: bench
                socket: {path: \(dir)/run/coinmechd.sock}
                state_dir: \(dir)/\(name)
                metrics: {listen: off}
                mqtt: {host: 127.0.0.1, port: \(port), max_inflight: 20, tls: off}
                delivery: {acks: off}
                """.write(toFile: "\(dir)/\(name).yaml", atomically: true, encoding: .utf8)
            return "\(dir)/\(name).yaml"
        }
        try "seed: 5\ncurrency: USD\nmix: {quarter: 3, dime: 2, nickel: 1}\nbaud: 115200\n".write(toFile: "\(dir)/mix.yaml", atomically: true, encoding: .utf8)
        try waitFor("coinmechd's socket") { daemon.isRunning && (try? CoinMechConnection(path: "\(dir)/run/coinmechd.sock")) != nil }
        // The subscriber is in place once a retained probe, sent at its subscription, reaches it.
        let probe = try ChildProcess(path: "/usr/bin/mosquitto_pub", ["-h", "127.0.0.1", "-p", "\(port)", "-r", "-t", "bench/probe", "-m", "probe"],
                                     stderrPath: "\(dir)/probe.log")
        guard probe.wait(timeout: 10) == 0 else { throw ValidationError("mosquitto_pub could not publish the probe: see \(dir)/probe.log") }
        let subscriber = try ChildProcess(path: "/usr/bin/mosquitto_sub", ["-h", "127.0.0.1", "-p", "\(port)", "-q", "1", "-t", "bench/probe",
                                                                          "-t", "coinmech/v1/bench/bench/event"], stderrPath: "\(dir)/subscriber.log")
        defer { subscriber.signal(SIGTERM); _ = subscriber.wait(timeout: 10) }
        guard subscriber.readLine(timeout: 10) == "probe" else { throw ValidationError("the subscriber did not subscribe: see \(dir)/subscriber.log") }

        // Steady: coins at --rate, each event's lag from its commit to its receipt here.
        let bridge = try ChildProcess(path: "\(bin)/coinmech-bridge", ["--config", try bridgeConfig("steady")], stderrPath: "\(dir)/bridge-steady.log")
        let coins = Int(seconds * rate)
        let steady = try ChildProcess(path: "\(bin)/coinsim", ["--scenario", "\(dir)/mix.yaml", "--link", "\(dir)/mech", "--truth", "\(dir)/steady.json",
                                                             "--coins", "\(coins)", "--rate", "\(rate)"], stderrPath: "\(dir)/coinsim-steady.log")
        var lags: [Int] = []
        var lastSeq: Int64 = 0
        let steadyEnd = Date().addingTimeInterval(seconds + 30)
        while Date() < steadyEnd {
            guard let line = subscriber.readLine(timeout: 0.5) else {
                guard subscriber.isRunning else { throw ValidationError("the subscriber exited: see \(dir)/subscriber.log") }
                if !steady.isRunning && lastSeq > 0 { break }
                continue
            }
            let received = Date().timeIntervalSince1970
            guard let message = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], let event = message["event"] as? [String: Any],
                  let time = event["time"] as? Double, let seq = message["seq"] as? Int64 else { continue }
            lags.append(Int((received - time) * 1_000_000))
            lastSeq = max(lastSeq, seq)
        }
        guard steady.wait(timeout: 30) == 0 else { throw ValidationError("coinsim (steady) failed: see \(dir)/coinsim-steady.log") }
        bridge.signal(SIGTERM)
        _ = bridge.wait(timeout: 20)

        // Backlog: coins into the ledger with no bridge, as fast as the line goes; then a new
        // bridge (no cursor) sends the whole ledger.
        let writeStart = Date()
        let burst = try ChildProcess(path: "\(bin)/coinsim", ["--scenario", "\(dir)/mix.yaml", "--link", "\(dir)/mech", "--truth", "\(dir)/burst.json",
                                                            "--coins", "\(backlog)", "--lockstep"], stderrPath: "\(dir)/coinsim-burst.log")
        guard burst.wait(timeout: 600) == 0 else { throw ValidationError("coinsim (backlog) failed: see \(dir)/coinsim-burst.log") }
        let writeSeconds = Date().timeIntervalSince(writeStart)
        let client = try CoinMechConnection(path: "\(dir)/run/coinmechd.sock")
        // Every coin settled first: the last seq is the ledger's last word on them.
        let settle = Date().addingTimeInterval(30)
        while (try client.request(.status)["pending"]?.int ?? 0) > 0, Date() < settle { usleep(20_000) }
        let total = try client.request(.status)["last_seq"]?.int ?? 0
        let written = total - lastSeq
        while subscriber.readLine(timeout: 0.2) != nil {}
        let sendStart = Date()
        let backlogBridge = try ChildProcess(path: "\(bin)/coinmech-bridge", ["--config", try bridgeConfig("backlog")], stderrPath: "\(dir)/bridge-backlog.log")
        defer { backlogBridge.signal(SIGTERM); _ = backlogBridge.wait(timeout: 20) }
        var seen = Set<Int64>()
        let sendEnd = Date().addingTimeInterval(600)
        while seen.count < Int(total), Date() < sendEnd {
            guard subscriber.isRunning else { throw ValidationError("the subscriber exited: see \(dir)/subscriber.log") }
            guard let line = subscriber.readLine(timeout: 1), let message = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                  let seq = message["seq"] as? Int64 else { continue }
            seen.insert(seq)
        }
        let sendSeconds = Date().timeIntervalSince(sendStart)
        guard seen.count == Int(total) else { throw ValidationError("the backlog bridge sent \(seen.count) of \(total) events in 600 s: see \(dir)/bridge-backlog.log") }

        lags.sort()
        let result: [String: Any] = [
            "steady_rate_coins_per_s": rate, "steady_events": lags.count, "lag_p50_us": percentile(lags, 0.5), "lag_p99_us": percentile(lags, 0.99),
            "lag_max_us": lags.last ?? 0, "backlog_events": Int(total), "backlog_events_per_s": Double(total) / sendSeconds,
            "ledger_events_per_s_while_written": Double(written) / writeSeconds,
        ]
        if json {
            print(String(decoding: try JSONSerialization.data(withJSONObject: result, options: [.sortedKeys]), as: UTF8.self))
            return
        }
        print("fleet bridge to a local mosquitto (acks off)")
        print(String(format: "  steady %.0f coins/s: %d events, lag commit → subscriber p50 %.1f ms, p99 %.1f ms, max %.1f ms", rate, lags.count,
                     Double(percentile(lags, 0.5)) / 1000, Double(percentile(lags, 0.99)) / 1000, Double(lags.last ?? 0) / 1000))
        print(String(format: "  backlog: %d events sent by a fresh bridge in %.2f s: %.0f events/s (the daemon wrote %d of them at %.0f events/s)",
                     Int(total), sendSeconds, Double(total) / sendSeconds, Int(written), Double(written) / writeSeconds))
    }

    private func waitFor(_ what: String, _ condition: () -> Bool) throws {
        let deadline = Date().addingTimeInterval(30)
        while !condition() {
            guard Date() < deadline else { throw ValidationError("waited 30 s for \(what)") }
            usleep(20_000)
        }
    }

    private func accepts(_ port: Int) -> Bool { Loopback.accepts(port) }

    private func freePort() throws -> Int { try Loopback.freePort() }
}
