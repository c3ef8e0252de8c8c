#if canImport(Glibc)
import Glibc
#endif

/// The rule sshd's StrictModes applies: code is loaded only from files and directories that
/// nobody but trusted owners (root and the daemon's own user) can change.
struct FileTrust: Sendable {
    let trustedOwners: Set<uid_t>

    func check(file path: String) throws(PluginLoadError) {
        let file = try status(of: path)
        guard (file.st_mode & S_IFMT) == S_IFREG else {
            throw .unreadable(path: path, reason: "not a regular file")
        }
        try checkOwnerAndMode(file, path: path, what: "file")
        let directory = Self.directory(of: path)
        try checkOwnerAndMode(try status(of: directory), path: path, what: "directory \(directory)")
    }

    private func checkOwnerAndMode(_ info: Glibc.stat, path: String, what: String) throws(PluginLoadError) {
        guard trustedOwners.contains(info.st_uid) else {
            throw .unsafePermissions(path: path, reason: "\(what) is owned by uid \(info.st_uid), not by root or the daemon's user")
        }
        if info.st_mode & (S_IWGRP | S_IWOTH) != 0 {
            let mode = String(info.st_mode & 0o7777, radix: 8)
            throw .unsafePermissions(path: path, reason: "\(what) is writable by group or others (mode \(mode))")
        }
    }

    private func status(of path: String) throws(PluginLoadError) -> Glibc.stat {
        var info = Glibc.stat()
        guard stat(path, &info) == 0 else {
            throw .unreadable(path: path, reason: String(cString: strerror(errno)))
        }
        return info
    }

    static func directory(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }
}
