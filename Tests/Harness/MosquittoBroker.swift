import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A real mosquitto on loopback with persistence on, saved every `autosave` seconds: a kill -9
/// inside that interval loses what it PUBACKed since, as a broker's crash does. For the chaos
/// runs of the bridge and of the fleet.
public final class MosquittoBroker {
    public let dir: String
    public let port: Int
    /// The CA its TLS listener's certificate comes from; nil: plaintext.
    public let tls: TestCA?
    public private(set) var process: ChildProcess?
    private var starts = 0

    public init(dir: String, autosave: Int = 2, tls: TestCA? = nil) throws(BrokerError) {
        self.dir = dir
        self.tls = tls
        do { port = try Loopback.freePort() } catch { throw BrokerError("\(error)") }
        let listenerTLS = tls.map { "\ncafile \($0.caFile)\ncertfile \($0.brokerCertificate)\nkeyfile \($0.brokerKey)\ntls_version tlsv1.2" } ?? ""
        do {
            try """
                listener \(port) 127.0.0.1\(listenerTLS)
                allow_anonymous true
                # Started as root it would switch to the mosquitto user, who cannot write this folder.
                user root
                persistence true
                persistence_location \(dir)/
                autosave_interval \(autosave)
                # Never drop a queued message for a persistent session: a drop would be the
                # broker's bound, not the feed's order (docs/FLEET.md, Scale).
                max_queued_messages 0
                """.write(toFile: "\(dir)/mosquitto.conf", atomically: true, encoding: .utf8)
        } catch { throw BrokerError("cannot write \(dir)/mosquitto.conf: \(error)") }
        try start()
    }

    public func start() throws(BrokerError) {
        starts += 1
        let broker: ChildProcess
        do {
            broker = try ChildProcess(path: "/usr/sbin/mosquitto", ["-c", "\(dir)/mosquitto.conf"], stderrPath: "\(dir)/mosquitto-\(starts).log")
        } catch { throw BrokerError("\(error) (scripts/bootstrap installs mosquitto)") }
        process = broker
        let deadline = Date().addingTimeInterval(20)
        while !Loopback.accepts(port) {
            guard broker.isRunning else { throw BrokerError("mosquitto exited at start: see \(dir)/mosquitto-\(starts).log") }
            guard Date() < deadline else { throw BrokerError("mosquitto did not listen on \(port) within 20 s") }
            usleep(20_000)
        }
    }

    /// What a bridge's or the fleet's `mqtt` table says of TLS for this broker.
    public var tlsSetting: String { tls.map { "tls: {ca_file: \($0.caFile)}" } ?? "tls: off" }

    /// What mosquitto_pub and mosquitto_sub need to reach it (the CA to check it against).
    public var clientArguments: [String] { ["-h", "127.0.0.1", "-p", "\(port)"] + (tls.map { ["--cafile", $0.caFile] } ?? []) }

    public func kill() {
        process?.signal(SIGKILL)
        _ = process?.wait(timeout: 20)
    }

    /// Every session, queued message and retained message gone, as a broker replaced or its
    /// disk lost: killed, its file removed, started again.
    public func clearSessions() throws(BrokerError) {
        kill()
        try? FileManager.default.removeItem(atPath: "\(dir)/mosquitto.db")
        try start()
    }
}

public struct BrokerError: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}
