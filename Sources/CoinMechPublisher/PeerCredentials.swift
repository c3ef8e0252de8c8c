#if canImport(Glibc)
import Glibc
#endif

/// Who is on the other end of a client connection (SO_PEERCRED).
public struct PeerCredentials: Sendable, Hashable, CustomStringConvertible {
    public var pid: Int32
    public var uid: UInt32
    public var gid: UInt32
    /// The user's name, once looked up (`resolveName`, a blocking NSS call: not on an event loop).
    public private(set) var name: String?

    public init(pid: Int32, uid: UInt32, gid: UInt32) {
        self.pid = pid
        self.uid = uid
        self.gid = gid
    }

    /// Looks the user's name up (getpwuid_r): blocking, so off the event loops.
    public mutating func resolveName() {
        var entry = passwd()
        var found: UnsafeMutablePointer<passwd>?
        var buffer = [CChar](repeating: 0, count: 4096)
        if getpwuid_r(uid, &entry, &buffer, buffer.count, &found) == 0, found != nil, let pointer = entry.pw_name {
            name = String(cString: pointer)
        }
    }

    /// The user's name if looked up, else the number.
    public var userName: String { name ?? "\(uid)" }

    public var description: String { "\(userName) (uid \(uid), pid \(pid))" }
}

/// The layout of Linux's `struct ucred` (which Glibc's module does not export).
struct UCred {
    var pid: Int32 = 0
    var uid: UInt32 = 0
    var gid: UInt32 = 0
}
