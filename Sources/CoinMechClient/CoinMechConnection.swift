import CoinMechProtocol
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Why talking to the daemon failed, in words a person can act on.
public enum ClientError: Error, Sendable, Equatable, CustomStringConvertible {
    /// No socket, or nobody listening.
    case notRunning(path: String)
    case permissionDenied(path: String)
    case connection(path: String, message: String)
    /// The daemon closed the connection.
    case closed
    case timeout
    /// Something arrived that is not the protocol.
    case protocolViolation(String)
    /// The daemon answered with an error.
    case server(code: String, message: String)

    public var description: String {
        switch self {
        case .notRunning(let path): "coinmechd is not running (no socket at \(path))"
        case .permissionDenied(let path): "permission denied on \(path): join the socket's group or run as a permitted user"
        case .connection(let path, let message): "\(path): \(message)"
        case .closed: "the daemon closed the connection"
        case .timeout: "the daemon did not answer in time"
        case .protocolViolation(let message): "unexpected data from the daemon: \(message)"
        case .server(let code, let message): "\(message) (\(code))"
        }
    }
}

/// A blocking connection to coinmechd's socket: send requests, read replies and events.
public final class CoinMechConnection {
    public let path: String
    /// The daemon's greeting.
    public private(set) var hello: JSON = .null
    private let fd: Int32
    private var buffer: [UInt8] = []
    private var nextID: Int64 = 1
    /// Events that arrived while waiting for a reply, in order.
    private var pendingEvents: [JSON] = []

    public static let defaultPath = "/run/coinmech/coinmechd.sock"

    public init(path: String, timeout: Double = 5) throws(ClientError) {
        self.path = path
        fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw .connection(path: path, message: String(cString: strerror(errno))) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else {
            close(fd)
            throw .connection(path: path, message: "socket path too long")
        }
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes + [0]) }
        let status = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        if status != 0 {
            let code = errno
            close(fd)
            switch code {
            case ENOENT, ECONNREFUSED: throw .notRunning(path: path)
            case EACCES, EPERM: throw .permissionDenied(path: path)
            default: throw .connection(path: path, message: String(cString: strerror(code)))
            }
        }
        let greeting = try readMessage(timeout: timeout)
        // A daemon at its connection limit answers with an error saying so, and closes.
        if greeting["type"]?.string == "reply", greeting["ok"]?.bool == false {
            throw .server(code: greeting["error"]?["code"]?.string ?? "?", message: greeting["error"]?["message"]?.string ?? "?")
        }
        guard greeting["type"]?.string == "hello" else { throw .protocolViolation("expected hello, got \(greeting)") }
        hello = greeting
    }

    deinit { close(fd) }

    /// Sends `cmd` with `arguments` and returns the reply's `result`; a daemon error throws.
    @discardableResult
    public func request(_ command: OperatorCommand, timeout: Double = 10) throws(ClientError) -> JSON {
        let id = nextID
        nextID += 1
        return try exchange(command.request(id: .int(id)), id: id, timeout: timeout)
    }

    /// Sends `command` and reads its reply as `Reply`, the typed reply its command answers with
    /// (`OperatorReply`); a reply of another shape is a protocol violation.
    public func request<Reply: OperatorReply>(_ command: OperatorCommand, as reply: Reply.Type, timeout: Double = 10) throws(ClientError) -> Reply {
        try Reply.read(try request(command, timeout: timeout))
    }

    /// Sends `cmd` with `arguments` as they are, unchecked: for probing the daemon with
    /// requests no `OperatorCommand` makes (tests of its refusals).
    @discardableResult
    public func request(_ cmd: String, _ arguments: [String: JSON] = [:], timeout: Double = 10) throws(ClientError) -> JSON {
        let id = nextID
        nextID += 1
        var message = arguments
        message["cmd"] = .string(cmd)
        message["id"] = .int(id)
        return try exchange(.object(message), id: id, timeout: timeout)
    }

    /// Writes `message` and waits for the reply to `id`, keeping events that arrive first.
    private func exchange(_ message: JSON, id: Int64, timeout: Double) throws(ClientError) -> JSON {
        try sendLine(message.description)
        while true {
            let reply = try readMessage(timeout: timeout)
            if reply["type"]?.string == "event" || reply["type"]?.string == "overflow" {
                pendingEvents.append(reply)
                continue
            }
            guard reply["type"]?.string == "reply", reply["id"]?.int == id else { continue }
            if reply["ok"]?.bool == true { return reply["result"] ?? .null }
            throw .server(code: reply["error"]?["code"]?.string ?? "?", message: reply["error"]?["message"]?.string ?? "?")
        }
    }

    /// The next event or overflow notice (after `subscribe`); nil on timeout.
    public func nextEvent(timeout: Double) throws(ClientError) -> JSON? {
        if !pendingEvents.isEmpty { return pendingEvents.removeFirst() }
        do {
            while true {
                let message = try readMessage(timeout: timeout)
                if message["type"]?.string == "event" || message["type"]?.string == "overflow" { return message }
            }
        } catch ClientError.timeout {
            return nil
        }
    }

    /// The next subscription message, read into its type (after `subscribe`); nil on timeout.
    public func nextMessage(timeout: Double) throws(ClientError) -> SubscriptionMessage? {
        try nextEvent(timeout: timeout).map(SubscriptionMessage.read)
    }

    /// Sends raw text as one line (for testing the daemon's error handling).
    public func sendLine(_ text: String) throws(ClientError) {
        let bytes = Array((text + "\n").utf8)
        var offset = 0
        while offset < bytes.count {
            let n = bytes[offset...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard n > 0 else { throw errno == EPIPE ? .closed : .connection(path: path, message: String(cString: strerror(errno))) }
            offset += n
        }
    }

    /// Reads the next message of any type.
    public func readMessage(timeout: Double) throws(ClientError) -> JSON {
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            if let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: buffer[..<newline], as: UTF8.self)
                buffer.removeSubrange(...newline)
                guard let message = JSON.parse(line) else { throw .protocolViolation(line) }
                return message
            }
            let remaining = deadline.timeIntervalSinceNow
            guard remaining > 0 else { throw .timeout }
            var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&descriptor, 1, Int32(min(remaining, 1) * 1000) + 1) > 0 else { continue }
            var chunk = [UInt8](repeating: 0, count: 65536)
            let n = recv(fd, &chunk, chunk.count, 0)
            guard n > 0 else { throw .closed }
            buffer.append(contentsOf: chunk[..<n])
        }
    }
}

extension DaemonMessage {
    /// Reads a reply or message the daemon sent; one of another shape is a protocol violation.
    public static func read(_ json: JSON) throws(ClientError) -> Self {
        do throws(ReplyError) {
            return try Self(json: json)
        } catch {
            throw .protocolViolation("\(error)")
        }
    }
}
