import CSandbox
import CoinMechChain
import CoinMechPlugins

#if canImport(Glibc)
import Glibc
#endif

/// The layers this host puts around its plugin (docs/PLUGINS.md, "The sandbox"), in the order
/// the kernel needs them: the network namespace while the process has one thread, then limits,
/// Landlock and the seccomp allow-list (on every thread), all before the plugin's file is
/// mapped. Its constructors, its entry and its `create` run inside every layer there is, and so
/// does anything they start.
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

    /// Limits, Landlock (reading only the libraries the plugin may link and what its link
    /// lists), then the allow-list; a forbidden call from then on sends a `violation` on
    /// `channel` and ends the host.
    mutating func enter(channel: Int32) {
        guard policy.missing != .off else { return }
        var limits = cm_sandbox_limits(address_space: UInt64(policy.memoryMiB) << 20, open_files: UInt64(policy.openFiles),
                                       processes: UInt64(policy.processes), cpu_seconds: UInt64(policy.cpuSeconds))
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
        // Last, and before the plugin's file is mapped: what loading needs is on the list.
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
