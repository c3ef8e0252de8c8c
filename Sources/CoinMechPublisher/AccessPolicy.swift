#if canImport(Glibc)
import Glibc
#endif

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

    /// Whether `peer` may send control commands, known without a lookup of its groups: its user
    /// or its primary group is listed. (A connection is admitted with it, before any NSS call.)
    public func allowsControlAtOnce(_ peer: PeerCredentials) -> Bool { users.contains(peer.uid) || groups.contains(peer.gid) }

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
