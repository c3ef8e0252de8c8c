#if canImport(Glibc)
import Glibc
#endif

/// The user an isolated link's plugin host runs as: the daemon changes to it between fork and
/// exec, which needs CAP_SETUID and CAP_SETGID (root, or a unit that grants them).
public struct HostUser: Sendable, Hashable {
    public var name: String
    public var uid: uid_t
    public var gid: gid_t

    /// Looks `name` up in the user database; nil if there is no such user.
    public static func named(_ name: String) -> HostUser? {
        var entry = passwd()
        var result: UnsafeMutablePointer<passwd>?
        var buffer = [CChar](repeating: 0, count: 4096)
        guard getpwnam_r(name, &entry, &buffer, buffer.count, &result) == 0, result != nil else { return nil }
        return HostUser(name: name, uid: entry.pw_uid, gid: entry.pw_gid)
    }
}
