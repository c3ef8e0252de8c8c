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

    static func accepts(_ port: Int) -> Bool { Loopback.accepts(port) }

    static func freePort() throws -> Int {
        do { return try Loopback.freePort() } catch { throw ChaosError("\(error)") }
    }
}
