import CLinux
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Talks to systemd's `$NOTIFY_SOCKET` (sd_notify(3)) directly: one datagram per message,
/// to a path or, for a name starting with `@`, the abstract namespace. Without
/// `$NOTIFY_SOCKET` (not run by systemd) every call does nothing.
public struct SystemdNotifier: Sendable {
    public let socketPath: String?
    /// `$WATCHDOG_USEC` when it is meant for this process (`$WATCHDOG_PID` absent or ours).
    public let watchdogMicroseconds: UInt64?

    public init(environment: [String: String] = ProcessInfo.processInfo.environment) {
        socketPath = environment["NOTIFY_SOCKET"].flatMap { $0.isEmpty ? nil : $0 }
        let forUs = environment["WATCHDOG_PID"].map { Int32($0) == getpid() } ?? true
        watchdogMicroseconds = forUs ? environment["WATCHDOG_USEC"].flatMap { UInt64($0) }.flatMap { $0 > 0 ? $0 : nil } : nil
    }

    public var isActive: Bool { socketPath != nil }

    /// Sends `state` (e.g. "READY=1\nSTATUS=…"); returns false if it could not.
    @discardableResult
    public func notify(_ state: String) -> Bool {
        guard let socketPath else { return false }
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        var path = Array(socketPath.utf8)
        let abstract = path.first == UInt8(ascii: "@")
        if abstract { path[0] = 0 }
        guard path.count < MemoryLayout.size(ofValue: address.sun_path) else { return false }
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: path) }
        // Abstract names are exactly as long as given; paths end at their NUL.
        let length = socklen_t(MemoryLayout<sa_family_t>.size + path.count + (abstract ? 0 : 1))
        let bytes = Array(state.utf8)
        let sent = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { sendto(fd, bytes, bytes.count, Int32(MSG_NOSIGNAL), $0, length) }
        }
        return sent == bytes.count
    }

    /// `MONOTONIC_USEC=` for `RELOADING=1`, as systemd 253+ expects (older ones ignore it).
    public static func monotonicMicroseconds() -> UInt64 { cm_monotonic_ns() / 1000 }
}
