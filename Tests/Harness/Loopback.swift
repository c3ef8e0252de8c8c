#if canImport(Glibc)
import Glibc
#endif

/// TCP on 127.0.0.1 for the servers the tests, the chaos run and the benches start (mosquitto,
/// prometheus): a port to give one, and whether it listens yet.
public enum Loopback {
    /// Whether something accepts connections on `port`.
    public static func accepts(_ port: Int) -> Bool {
        guard let fd = connect(port) else { return false }
        close(fd)
        return true
    }

    /// A TCP connection to 127.0.0.1:`port`, its descriptor the caller's to close; nil if refused.
    /// `source` (another address of 127/8, all loopback on Linux) is the address it comes from:
    /// a server sees as many clients as the test needs, each with an address of its own.
    public static func connect(_ port: Int, from source: String? = nil) -> Int32? {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        if let source {
            var local = sockaddr_in()
            local.sin_family = sa_family_t(AF_INET)
            local.sin_addr.s_addr = inet_addr(source)
            let bound = withUnsafePointer(to: &local) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
            guard bound == 0 else {
                close(fd)
                return nil
            }
        }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            close(fd)
            return nil
        }
        return fd
    }

    /// A port the kernel had free a moment ago (another process may take it before the server
    /// binds it; the server's start then fails and says so).
    public static func freePort() throws(LoopbackError) -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        guard bound == 0 else { throw LoopbackError(errno: errno) }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}

/// No port could be had on loopback.
public struct LoopbackError: Error, CustomStringConvertible {
    public let errno: Int32
    public var description: String { "no free port on 127.0.0.1: \(String(cString: strerror(errno)))" }
}
