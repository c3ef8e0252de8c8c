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

/// Who may use control commands (inhibit, collect, reload): configured users and groups.
public struct AccessPolicy: Sendable {
    public let users: Set<UInt32>
    public let groups: Set<UInt32>
    /// Names from the configuration that match no user or group here.
    public let unknownNames: [String]

    public init(users: [String], groups: [String]) {
        var uids: Set<UInt32> = [], gids: Set<UInt32> = [], unknown: [String] = []
        for name in users {
            if let entry = getpwnam(name) { uids.insert(entry.pointee.pw_uid) } else { unknown.append("user \(name)") }
        }
        for name in groups {
            if let entry = getgrnam(name) { gids.insert(entry.pointee.gr_gid) } else { unknown.append("group \(name)") }
        }
        self.users = uids
        self.groups = gids
        unknownNames = unknown
    }

    /// Whether `peer` may send control commands: its user is listed, or its primary or any
    /// supplementary group is.
    public func allowsControl(_ peer: PeerCredentials) -> Bool {
        if users.contains(peer.uid) || groups.contains(peer.gid) { return true }
        guard !groups.isEmpty, let entry = getpwuid(peer.uid), let name = entry.pointee.pw_name else { return false }
        var count: Int32 = 64
        var list = [gid_t](repeating: 0, count: Int(count))
        guard getgrouplist(name, peer.gid, &list, &count) >= 0 else { return false }
        return list.prefix(Int(count)).contains { groups.contains($0) }
    }
}
