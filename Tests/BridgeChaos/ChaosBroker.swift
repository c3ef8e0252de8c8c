import CoinMechHarness
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A real mosquitto on loopback with persistence on, saved every 2 s: a kill -9 inside that
/// interval loses what it PUBACKed since, as a broker's crash does.
final class ChaosBroker {
    let dir: String
    let port: Int
    private(set) var process: ChildProcess?
    private var starts = 0

    init(dir: String) throws {
        self.dir = dir
        port = try Self.freePort()
        try """
            listener \(port) 127.0.0.1
            allow_anonymous true
            # Started as root it would switch to the mosquitto user, who cannot write this folder.
            user root
            persistence true
            persistence_location \(dir)/
            autosave_interval 2
            # Never drop a queued message for the subscriber's session: a drop would be the
            # broker's bound, not the bridge's order (docs/FLEET.md, Scale).
            max_queued_messages 0
            """.write(toFile: "\(dir)/mosquitto.conf", atomically: true, encoding: .utf8)
        try start()
    }

    func start() throws {
        starts += 1
        let broker = try ChildProcess(path: "/usr/sbin/mosquitto", ["-c", "\(dir)/mosquitto.conf"], stderrPath: "\(dir)/mosquitto-\(starts).log")
        process = broker
        let deadline = Date().addingTimeInterval(20)
        while !Self.accepts(port) {
            guard broker.isRunning else { throw ChaosError("mosquitto exited at start: see \(dir)/mosquitto-\(starts).log") }
            guard Date() < deadline else { throw ChaosError("mosquitto did not listen on \(port) within 20 s") }
            usleep(20_000)
        }
    }

    func kill() {
        process?.signal(SIGKILL)
        _ = process?.wait(timeout: 20)
    }

    /// Every session, queued message and retained message gone, as a broker replaced or its
    /// disk lost: killed, its file removed, started again.
    func clearSessions() throws {
        kill()
        try? FileManager.default.removeItem(atPath: "\(dir)/mosquitto.db")
        try start()
    }

    static func accepts(_ port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } } == 0
    }

    static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        guard bound == 0 else { throw ChaosError("no free port on loopback: \(String(cString: strerror(errno)))") }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}
