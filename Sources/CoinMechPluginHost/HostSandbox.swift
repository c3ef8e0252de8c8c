import CSandbox
import CoinMechChain
import CoinMechPlugins

#if canImport(Glibc)
import Glibc
#endif

/// The layers this host puts around its plugin (docs/PLUGINS.md, "The sandbox"), in the order
/// the kernel needs them: the network namespace while the process has one thread, limits and
/// Landlock before the plugin is loaded (so threads it starts inherit them), the seccomp
/// allow-list once it is loaded and created (on every thread).
struct HostSandbox {
    let policy: SandboxPolicy
    private(set) var report = SandboxReport()

    /// `namespaceError`: what `cm_sandbox_network_namespace` returned at the start.
    init(policy: SandboxPolicy, namespaceError: Int32) {
        self.policy = policy
        if policy.missing == .off {
            report.missing.append("every layer: the link's configuration says sandbox: off")
        } else if namespaceError == 0 {
            report.networkNamespace = true
        } else {
            report.missing.append("network namespace: unshare(CLONE_NEWUSER|CLONE_NEWNET) failed (\(Self.text(namespaceError))): user namespaces are not allowed here; seccomp still forbids opening sockets")
        }
    }

    /// Limits and Landlock: reading only the plugin's file and the libraries it may link.
    mutating func beforeLoad() {
        guard policy.missing != .off else { return }
        var limits = cm_sandbox_limits(address_space: UInt64(policy.memoryMiB) << 20, open_files: UInt64(policy.openFiles),
                                       processes: UInt64(policy.processes))
        var failed: UnsafePointer<CChar>?
        let limitError = cm_sandbox_limit(&limits, &failed)
        if limitError == 0 {
            report.limits = true
        } else {
            report.missing.append("limits: \(failed.map { String(cString: $0) } ?? "setrlimit") failed (\(Self.text(limitError)))")
        }
        let readable = Self.libraryDirectories() + policy.readable
        // The plugin's sealed copy needs no rule: a memfd is on an internal filesystem, which
        // Landlock leaves to the descriptor that reaches it.
        let abi = withCStrings(readable) { paths in cm_sandbox_landlock(paths, &failed) }
        if abi > 0 {
            report.landlockABI = Int(abi)
        } else {
            let why = -abi == ENOSYS || -abi == EOPNOTSUPP
                ? "this kernel has no Landlock, or it is not enabled at boot (lsm=…,landlock)"
                : "\(failed.map { String(cString: $0) } ?? "landlock") failed"
            report.missing.append("landlock: \(why) (\(Self.text(-abi))): the plugin can read and write what this user can")
        }
    }

    /// The allow-list; a forbidden call sends a `violation` on `channel` and ends the host.
    mutating func afterLoad(channel: Int32) {
        guard policy.missing != .off else { return }
        var failed: UnsafePointer<CChar>?
        let error = cm_sandbox_seccomp(channel, HostWire.Kind.violation.rawValue, &failed)
        if error == 0 {
            report.seccomp = true
        } else {
            report.missing.append("seccomp: \(failed.map { String(cString: $0) } ?? "seccomp") failed (\(Self.text(-error))): the plugin can make any system call")
        }
    }

    /// Where the plugin's libraries can come from: the system's library directories and
    /// the directories of every library this host has mapped (the Swift runtime's among them).
    static func libraryDirectories() -> [String] {
        var directories: Set<String> = ["/lib", "/lib64", "/usr/lib", "/usr/lib64", "/usr/local/lib", "/etc/ld.so.cache"]
        if let maps = try? String(contentsOfFile: "/proc/self/maps", encoding: .utf8) {
            for line in maps.split(separator: "\n") {
                guard let slash = line.firstIndex(of: "/") else { continue }
                let path = line[slash...]
                guard path.hasSuffix(".so") || path.contains(".so.") else { continue }
                if let last = path.lastIndex(of: "/") { directories.insert(String(path[..<last])) }
            }
        }
        return directories.sorted()
    }

    private static func text(_ error: Int32) -> String { String(cString: strerror(error)) }
}
