import CoinMechHarness
import CoinMechClient
import CoinMechDaemon
import CoinMechSupport
@testable import CoinMechTestSupport
import Foundation
import Testing

/// A real `$NOTIFY_SOCKET`: a datagram socket the test binds and reads.
final class NotifySocket {
    let path: String
    let fd: Int32
    private(set) var messages: [String] = []

    init(abstract: Bool = false) {
        path = abstract ? "@coinmech-test-\(getpid())-\(UInt32.random(in: 0...UInt32.max))" : "\(TestSupport.temporaryDirectory("notify"))/notify.sock"
        fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        var bytes = Array(path.utf8)
        if abstract { bytes[0] = 0 }
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes) }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + bytes.count + (abstract ? 0 : 1))
        _ = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) } }
    }

    deinit { close(fd) }

    /// Reads datagrams until `until` holds for what arrived; fails (throws) after `timeout` s.
    @discardableResult
    func waitFor(_ what: String, timeout: Double, until: ([String]) -> Bool) throws -> [String] {
        try TestSupport.waitUntil(what, timeout: timeout) {
            receive(forMilliseconds: 50)
            return until(messages)
        }
        return messages
    }

    /// Reads what arrives during `seconds` (to count periodic messages, or see them stop).
    func observe(seconds: Double) {
        let end = Date().addingTimeInterval(seconds)
        while Date() < end { receive(forMilliseconds: 50) }
    }

    /// Waits up to `milliseconds` for a datagram, then takes every one that is waiting.
    private func receive(forMilliseconds milliseconds: Int32) {
        var waiting = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&waiting, 1, milliseconds) > 0 else { return }
        var buffer = [UInt8](repeating: 0, count: 4096)
        while case let n = recv(fd, &buffer, buffer.count, Int32(MSG_DONTWAIT)), n > 0 {
            messages.append(String(decoding: buffer[..<n], as: UTF8.self))
        }
    }

    func count(_ needle: String) -> Int { messages.filter { $0.contains(needle) }.count }
}

@Suite("systemd: notify, watchdog, reload, stop, socket activation", .serialized)
struct SystemdTests {
    @Test("the notifier reaches a path and an abstract socket")
    func notifier() throws {
        for abstract in [false, true] {
            let socket = NotifySocket(abstract: abstract)
            let notifier = SystemdNotifier(environment: ["NOTIFY_SOCKET": socket.path, "WATCHDOG_USEC": "2000000"])
            #expect(notifier.watchdogMicroseconds == 2_000_000)
            #expect(notifier.notify("READY=1\nSTATUS=hello"))
            #expect(try socket.waitFor("the datagram", timeout: 2) { !$0.isEmpty } == ["READY=1\nSTATUS=hello"])
        }
        #expect(!SystemdNotifier(environment: [:]).notify("READY=1"))
        #expect(SystemdNotifier(environment: ["NOTIFY_SOCKET": "/x", "WATCHDOG_USEC": "5", "WATCHDOG_PID": "1"]).watchdogMicroseconds == nil)
    }

    @Test("READY after start, watchdog pings, RELOADING then READY on SIGHUP, STOPPING on SIGTERM")
    func lifecycle() throws {
        let notify = NotifySocket()
        let harness = try DaemonHarness()
        try harness.startSimulator("coins: 0\nrate_per_s: 5\nmix: {quarter: 1}\n")
        try harness.startDaemon([], environment: ["NOTIFY_SOCKET": notify.path, "WATCHDOG_USEC": "400000"])
        try notify.waitFor("READY", timeout: 10) { $0.contains { $0.contains("READY=1") } }
        #expect(notify.messages.first?.hasPrefix("READY=1\nSTATUS=mech ") == true)  // connected or not yet
        #expect(FileManager.default.fileExists(atPath: harness.socket), "READY before the socket listened")
        try notify.waitFor("5 watchdog pings", timeout: 10) { $0.filter { $0.contains("WATCHDOG=1") }.count >= 5 }
        harness.daemon!.signal(SIGHUP)
        // READY after RELOADING, wherever the pings fall (one read with READY lost the race
        // with the next ping under load, when this asked for READY last).
        try notify.waitFor("RELOADING, then READY", timeout: 10) { messages in
            messages.firstIndex { $0.contains("RELOADING=1") }.map { messages[$0...].contains("READY=1") } ?? false
        }
        let reloading = try #require(notify.messages.firstIndex { $0.contains("RELOADING=1") })
        #expect(notify.messages[reloading].contains("MONOTONIC_USEC="))
        harness.daemon!.signal(SIGTERM)
        try notify.waitFor("STOPPING", timeout: 10) { $0.contains { $0.hasPrefix("STOPPING=1") } }
        #expect(notify.count("STOPPING=1") == 1)
        #expect(harness.daemon!.wait() == 0)
    }

    @Test("a wedged deciding loop stops the watchdog pings")
    func wedged() throws {
        let dir = TestSupport.temporaryDirectory("wedge")
        _ = try TestSupport.compileFixture("misbehaving", into: dir, as: "libmisbehaving.so")
        let notify = NotifySocket()
        // In process: only there can a plugin wedge the deciding loop (isolated, its host would be killed).
        let harness = try DaemonHarness(chain: "chain:\n  - plugin: misbehaving\n    isolation: in-process\n    config: {mode: hang}\n", extra: "plugin_dir: \(dir)",
                                        source: "{kind: serial, device: mech, baud: 9600, currencies: [USD]}")
        try harness.startDaemon([], pluginDirectory: nil, environment: ["NOTIFY_SOCKET": notify.path, "WATCHDOG_USEC": "400000"])
        try notify.waitFor("READY", timeout: 10) { $0.contains { $0.contains("READY=1") } }
        try notify.waitFor("2 watchdog pings while no coin comes", timeout: 10) { $0.filter { $0.contains("WATCHDOG=1") }.count >= 2 }
        try harness.startSimulator("coins: 0\nrate_per_s: 5\nmix: {quarter: 1}\n")  // the first coin wedges the loop
        let client = try CoinMechConnection(path: harness.socketWhenUp())
        try TestSupport.waitUntil("the deciding loop to be stuck for a second", timeout: 20) {
            notify.observe(seconds: 0.1)
            return (try client.request("status")["heartbeat_age_ms"]?.int ?? 0) > 1000
        }
        #expect(harness.daemonLog.contains("no more watchdog pings"))
        let pingsBefore = notify.count("WATCHDOG=1")
        notify.observe(seconds: 1)  // the absence of pings takes time to see
        #expect(notify.count("WATCHDOG=1") == pingsBefore, "pings went on while the loop was stuck")
        _ = try harness.stopDaemon(SIGKILL)
    }

    @Test("socket activation: systemd-socket-activate holds the socket and starts the daemon on the first client")
    func socketActivation() throws {
        let harness = try DaemonHarness()
        let socket = "\(harness.dir)/activated.sock"
        try harness.startSimulator("coins: 0\nrate_per_s: 5\nmix: {quarter: 1}\n")
        let activator = try ChildProcess("/usr/bin/systemd-socket-activate", [
            "-l", socket, "\(TestSupport.binDirectory)/coinmechd", "--config", harness.config, "--plugin-dir", TestSupport.binDirectory,
        ], absolute: true)
        try TestSupport.waitUntil("the activator's socket") { FileManager.default.fileExists(atPath: socket) }
        let client = try CoinMechConnection(path: socket, timeout: 15)  // this connection starts the daemon
        #expect(client.hello["daemon"] == "coinmechd")
        #expect(try client.request("status")["ledger"] == "ok")
        #expect(!FileManager.default.fileExists(atPath: harness.socket), "the daemon bound its own socket instead")
        activator.signal(SIGTERM)
        activator.wait()
    }
}
