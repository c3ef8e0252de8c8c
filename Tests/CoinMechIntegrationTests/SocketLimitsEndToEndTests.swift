import CoinMechClient
import CoinMechProtocol
@testable import CoinMechTestSupport
import CoinSimCore
import Foundation
import Testing

/// A socket that pushes back: local clients that flood, hold connections or keep the deciding
/// thread busy, against a real daemon taking 10 coins a second from coinsim. Before the limits,
/// 100,000 pipelined requests took the daemon from 50 to 165 MB, an `explain` flood made 102 of
/// 121 readings miss the mech's deadline, and 2,000 held connections used up its descriptors.
/// Each test measures the daemon's RSS against its idle figure and the mech's deadline misses.
@Suite("Socket limits: floods, held connections and the deciding thread", .serialized)
struct SocketLimitsEndToEndTests {
    /// A Unix-socket client that writes and reads raw bytes, as a hostile one would.
    final class RawClient {
        let fd: Int32

        init(path: String) throws {
            fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
            var address = sockaddr_un()
            address.sun_family = sa_family_t(AF_UNIX)
            withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(path.utf8) + [0]) }
            let status = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
            }
            try #require(fd >= 0 && status == 0, "connect: \(String(cString: strerror(errno)))")
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        }

        deinit { close(fd) }

        /// Bytes written so far into a stream of one line repeated (a write may take part of one).
        private var sent = 0

        /// Writes `line` over and over, as much as the socket takes without waiting, until
        /// `copies` lines went in all; returns how many went whole so far.
        @discardableResult
        func pump(_ line: String, copies: Int) -> Int {
            let bytes = Array((line + "\n").utf8)
            let chunk = Array(repeating: bytes, count: 64).flatMap { $0 }
            while sent < copies * bytes.count {
                let offset = sent % chunk.count
                let count = min(chunk.count - offset, copies * bytes.count - sent)
                let written = chunk[offset..<(offset + count)].withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
                guard written > 0 else { break }
                sent += written
            }
            return sent / bytes.count
        }

        /// `pump` until `copies` lines went, or the socket took nothing for `quiet` seconds (the
        /// daemon stopped reading).
        func flood(_ line: String, copies: Int, quiet: Double = 2) -> Int {
            var lastProgress = Date()
            var whole = 0
            while whole < copies, Date().timeIntervalSince(lastProgress) < quiet {
                let now = pump(line, copies: copies)
                if now > whole || sent % (line.utf8.count + 1) != 0 { lastProgress = Date() }
                whole = now
                var descriptor = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
                _ = poll(&descriptor, 1, 100)
            }
            return whole
        }

        /// Lines read so far without waiting (their newlines counted).
        func readLines() -> Int {
            var chunk = [UInt8](repeating: 0, count: 65536)
            var lines = 0
            while true {
                let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                guard count > 0 else { return lines }
                lines += chunk[..<count].filter { $0 == UInt8(ascii: "\n") }.count
            }
        }

        /// Everything the daemon sends until it closes the connection (nil if it has not within
        /// `timeout` seconds).
        func readToEnd(timeout: Double) -> Data? {
            var data = Data()
            let deadline = Date().addingTimeInterval(timeout)
            var chunk = [UInt8](repeating: 0, count: 65536)
            while Date() < deadline {
                var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                guard poll(&descriptor, 1, 100) > 0 else { continue }
                let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                if count == 0 { return data }
                if count > 0 { data.append(contentsOf: chunk[..<count]) }
                if count < 0, errno != EAGAIN, errno != EINTR { return data }
            }
            return nil
        }
    }

    /// A daemon (idle timeout `idle` s) with coinsim inserting 10 quarters a second for `seconds`.
    static func start(seconds: Int, idle: Double = 2) throws -> DaemonHarness {
        // Idle timeout `idle`: a silent connection, or one that leaves its replies unread, goes then.
        let harness = try DaemonHarness(extra: "socket: {idle_timeout_s: \(idle)}")
        try harness.startSimulator("coins: \(seconds * 10)\nrate_per_s: 10\nseed: 23\nmix: {quarter: 1}\nnoise: {diameter: 0.002, weight: 0.002}\n")
        try harness.startDaemon()
        _ = try IsolationEndToEndTests.connect(harness)
        return harness
    }

    /// The daemon's resident memory, in bytes.
    static func rss(_ harness: DaemonHarness) throws -> Int {
        let status = try String(contentsOfFile: "/proc/\(harness.daemon!.pid)/status", encoding: .utf8)
        let line = try #require(status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") })
        return try #require(Int(line.split(separator: " ").dropFirst().first ?? "")) * 1024
    }

    static func descriptors(_ harness: DaemonHarness) -> Int {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(harness.daemon!.pid)/fd").count) ?? -1
    }

    /// The daemon's idle RSS: taken once coins flow and clients have come and gone, as the
    /// attacks find it.
    static func idleRSS(_ harness: DaemonHarness) throws -> Int {
        let client = try IsolationEndToEndTests.connect(harness)
        try TestSupport.waitUntil("coins to flow", timeout: 20) { (try client.request("status")["counters"]?["readings"]?.int ?? 0) >= 10 }
        return try rss(harness)
    }

    /// The run's end: no reading missed the mech's deadline, the money is right, and RSS stayed
    /// within 10 MB of idle (`peak`, sampled during the attack).
    static func expectUnharmed(_ harness: DaemonHarness, idle: Int, peak: Int, _ what: String) throws {
        let truth = try harness.simulatorTruth(timeout: 120)
        let status = try IsolationEndToEndTests.connect(harness).request("status")
        print("\(what): RSS idle \(idle / 1024) KiB, peak \(peak / 1024) KiB (+\((peak - idle) / 1024) KiB); "
            + "\(truth.outcomes.accepted) accepted, \(truth.outcomes.deadlineMisses) deadline misses of \(truth.sent.readings) readings")
        #expect(peak - idle <= 10 << 20, "\(what): RSS grew from \(idle / 1024) KiB to \(peak / 1024) KiB")
        #expect(truth.outcomes.deadlineMisses == 0, "\(what): \(truth.outcomes)")
        #expect(status["counters"]?["deadline_passed"]?.int == 0 && status["counters"]?["late_answers"]?.int == 0, "\(status)")
        #expect(try harness.stopDaemon() == 0, "\(harness.daemonLog)")
        try IsolationEndToEndTests.expectNothingWrongCredited(harness)
    }

    @Test("a client that pipelines 100,000 requests and reads no reply is pushed back by its own socket, then cut off with a message; the daemon neither grows nor misses the mech's deadline")
    func pipelinedFlood() throws {
        let harness = try Self.start(seconds: 12)
        let idle = try Self.idleRSS(harness)
        let flooder = try RawClient(path: harness.socket)
        var peak = idle
        let sent = flooder.flood(#"{"cmd":"status"}"#, copies: 100_000)
        peak = max(peak, try Self.rss(harness))
        // It stopped taking requests long before 100,000: the rest wait in the flooder's socket.
        #expect(sent < 100_000, "the daemon read \(sent) requests it could not answer")
        // Meanwhile another client is answered, and the flooder, whose replies wait unread for
        // the idle timeout, is cut off: its connection ends, and the daemon says why.
        #expect(try IsolationEndToEndTests.connect(harness).request("status")["last_seq"] != nil)
        try TestSupport.waitUntil("the flooder to be cut off", timeout: 20) { harness.daemonLog.contains("replies left unread for 2 s while requests wait: disconnected") }
        #expect(flooder.readToEnd(timeout: 20) != nil, "its connection did not end")
        peak = max(peak, try Self.rss(harness))
        print("pipelined flood: \(sent) requests taken by the sockets before the daemon stopped reading")
        try Self.expectUnharmed(harness, idle: idle, peak: peak, "pipelined flood")
    }

    @Test("2,000 connections held open: those past the limit are refused with a message, the others closed after the idle timeout; descriptors stay bounded and the daemon answers again")
    func heldConnections() throws {
        // The idle timeout outlasts opening the 2,000: the first 72 are still held then.
        let harness = try Self.start(seconds: 12, idle: 5)
        let idle = try Self.idleRSS(harness)
        let before = Self.descriptors(harness)
        var held: [RawClient] = []
        var peak = idle
        var most = before
        for _ in 0..<2000 {
            held.append(try RawClient(path: harness.socket))
            if held.count % 250 == 0 {
                peak = max(peak, try Self.rss(harness))
                most = max(most, Self.descriptors(harness))
            }
        }
        // The limit (64, and 8 more for a peer allowed control, as this one is) is full: one more
        // is told so at once rather than left waiting.
        do {
            _ = try CoinMechConnection(path: harness.socket)
            Issue.record("a connection past the limit was served")
        } catch {
            #expect("\(error)".contains("connections, its limit (socket.max_clients 64): try again later"), "\(error)")
        }
        most = max(most, Self.descriptors(harness))
        #expect(most - before <= 72 + 16, "the daemon held \(most - before) more descriptors")
        // The held connections said nothing: closed after the idle timeout; then it answers.
        try TestSupport.waitUntil("the idle connections to be closed", timeout: 20) { Self.descriptors(harness) <= before + 4 }
        #expect(try IsolationEndToEndTests.connect(harness).request("status")["last_seq"] != nil)
        peak = max(peak, try Self.rss(harness))
        print("held connections: \(held.count) opened, daemon descriptors \(before) idle, at most \(most)")
        held.removeAll()
        try Self.expectUnharmed(harness, idle: idle, peak: peak, "2,000 held connections")
    }

    @Test("a flood of explain, or of a control command, from one client and from eight: admitted at a bounded rate for all together, never at the cost of the mech's deadline",
          arguments: ["explain", "inhibit"])
    func deciderFlood(command: String) throws {
        let harness = try Self.start(seconds: 8)
        let idle = try Self.idleRSS(harness)
        let line = command == "explain" ? #"{"cmd":"explain","diameter":24.26,"weight":5.67}"# : #"{"cmd":"inhibit","on":false}"#
        // Nine floods: each pipelines and reads its replies as they come (a reader, not a stall).
        let clients = try (0..<9).map { _ in try RawClient(path: harness.socket) }
        let started = Date()
        var replies = 0
        var peak = idle
        while Date().timeIntervalSince(started) < 5 {
            for client in clients {
                client.pump(line, copies: 1_000_000)
                replies += client.readLines()
            }
            peak = max(peak, try Self.rss(harness))
            // Until a reply comes for any of them (at most 20 ms).
            var ready = clients.map { pollfd(fd: $0.fd, events: Int16(POLLIN), revents: 0) }
            _ = poll(&ready, nfds_t(ready.count), 20)
        }
        let seconds = Date().timeIntervalSince(started)
        print("\(command) flood: \(replies) replies in \(String(format: "%.1f", seconds)) s to 9 clients")
        // A burst of 10, then 20 a second (hello lines count too): the deciding thread's share.
        #expect(Double(replies) <= 10 + 9 + 20 * seconds + 20, "\(replies) \(command) replies in \(seconds) s")
        #expect(replies > 20, "the flood was not served at all")
        try Self.expectUnharmed(harness, idle: idle, peak: peak, "\(command) flood")
    }

    @Test("a connection that never sends a request is closed after the idle timeout, told why")
    func idleConnection() throws {
        let harness = try Self.start(seconds: 3, idle: 1)
        let silent = try RawClient(path: harness.socket)
        let said = try #require(silent.readToEnd(timeout: 10), "the silent connection was not closed")
        let lines = String(decoding: said, as: UTF8.self).split(separator: "\n")
        #expect(lines.first?.contains(#""type":"hello""#) == true)
        #expect(lines.last?.contains("no request within 1 s of connecting: disconnected") == true, "\(lines)")
        _ = try harness.simulatorTruth()
        #expect(try harness.stopDaemon() == 0, "\(harness.daemonLog)")
    }
}
