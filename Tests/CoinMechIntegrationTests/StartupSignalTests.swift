import CoinMechHarness
import CoinMechClient
@testable import CoinMechTestSupport
import Foundation
import Testing

/// TERM, INT and HUP at any moment of start-up: a TERM is a clean stop (status 0), a HUP a
/// reload once the chain is loaded. Before the signals were blocked from the first line of
/// `main`, a TERM soon after start killed the daemon by the default action (status 143) in
/// most tries, and a HUP stopped it.
///
/// "Start-up" begins at `main`: between exec and `main` the dynamic loader runs, and no process
/// can handle a signal there (systemd counts a TERM death there as a clean stop of a service
/// still activating, and holds a reload until READY). Each try waits until the process shows
/// the signals blocked in /proc, then sends its signal after a delay spread over start-up.
@Suite("Signals during start-up", .serialized)
struct StartupSignalTests {
    /// Delays spread over start-up: before the ledger opens, while plugins load, around the
    /// moment the socket appears (where the race was), and after.
    static func delay(_ attempt: Int) -> useconds_t { useconds_t(attempt * 12_000) }

    /// Waits until the daemon's main thread blocks TERM (/proc/PID/status, `SigBlk`): it has
    /// reached `main`.
    static func waitUntilInMain(_ daemon: ChildProcess) throws {
        try TestSupport.waitUntil("coinmechd to reach main", timeout: 20) {
            guard daemon.isRunning else { return true }
            let status = (try? String(contentsOfFile: "/proc/\(daemon.pid)/status", encoding: .utf8)) ?? ""
            guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix("SigBlk:") }),
                  let mask = UInt64(line.dropFirst("SigBlk:".count).trimmingCharacters(in: .whitespaces), radix: 16) else { return false }
            return mask & (1 << UInt64(SIGTERM - 1)) != 0
        }
    }

    @Test("TERM at any moment of start-up stops the daemon cleanly, 30 times out of 30")
    func termDuringStartup() throws {
        let harness = try DaemonHarness()
        var statuses: [Int32?] = []
        for attempt in 0..<30 {
            try harness.startDaemon()
            let daemon = try #require(harness.daemon)
            try Self.waitUntilInMain(daemon)
            if attempt % 2 == 1 {
                // Half of the tries aim at the socket's appearance, where the race was.
                try TestSupport.waitUntil("the socket", timeout: 20) { FileManager.default.fileExists(atPath: harness.socket) || !daemon.isRunning }
                usleep(Self.delay(attempt) / 8)
            } else {
                usleep(Self.delay(attempt))
            }
            daemon.signal(SIGTERM)
            statuses.append(daemon.wait(timeout: 20))
            try? FileManager.default.removeItem(atPath: harness.socket)
        }
        #expect(statuses.allSatisfy { $0 == 0 }, "exit statuses: \(statuses.map { $0.map(String.init) ?? "still running" })\n\(harness.daemonLog)")
    }

    @Test("HUP at any moment of start-up is a reload once the chain is loaded, never a stop, 10 times out of 10")
    func hupDuringStartup() throws {
        for attempt in 0..<10 {
            let harness = try DaemonHarness()
            try harness.startDaemon()
            let daemon = try #require(harness.daemon)
            try Self.waitUntilInMain(daemon)
            usleep(Self.delay(attempt * 3))
            daemon.signal(SIGHUP)
            try TestSupport.waitUntil("the socket", timeout: 20) { FileManager.default.fileExists(atPath: harness.socket) || !daemon.isRunning }
            #expect(daemon.isRunning, "a HUP during start-up stopped the daemon (attempt \(attempt)): \(harness.daemonLog)")
            // The HUP was deferred, not dropped: the first chain is generation 1, the reload's 2.
            try TestSupport.waitUntil("the HUP's reload", timeout: 20) {
                guard daemon.isRunning else { return true }
                return try CoinMechConnection(path: harness.socket).request("status")["chain_generation"]?.int == 2
            }
            #expect(try harness.stopDaemon() == 0, "attempt \(attempt): \(harness.daemonLog)")
        }
    }
}
