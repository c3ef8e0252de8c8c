/// What an isolated link's plugin host may use once its plugin is loaded, and what a layer the
/// kernel cannot give means for the link.
///
/// The layers (docs/PLUGINS.md, "The sandbox"): a network namespace, resource limits, Landlock
/// (files), and a seccomp allow-list (system calls). The first is extra (seccomp forbids
/// `socket` anyway, and the shipped unit allows no IP address family); the other three are the
/// sandbox.
public struct SandboxPolicy: Sendable, Hashable, Codable {
    public enum Missing: String, Sendable, Hashable, Codable, CaseIterable {
        /// A layer the kernel cannot give refuses the link: the default for plugins outside the
        /// shipped set.
        case required
        /// Logged and shown; the link runs with the layers there are.
        case warn
        /// No layer at all, as before 0.5.0: for measuring the sandbox's cost and for debugging
        /// a plugin, never for one the operator did not write.
        case off
    }

    public var missing: Missing
    /// `RLIMIT_AS` of the host, in MiB: the plugin's allocations fail beyond it.
    public var memoryMiB: Int
    /// `RLIMIT_NOFILE`: the host needs five descriptors; the plugin opens nothing after load.
    public var openFiles: Int
    /// `RLIMIT_NPROC`: counts the threads of every process of the host's user (the daemon's too,
    /// when it runs as the same user); ignored for root.
    public var processes: Int
    /// Files or directories the plugin may read besides the libraries (a calibration file it
    /// reads in create): read-only, named by the operator (`readable:`).
    public var readable: [String]
    /// `RLIMIT_CPU` of the host, in seconds of CPU over its life: the kernel kills it there, the
    /// last bound should the daemon's CPU watch miss a plugin that burns a core slowly.
    public var cpuSeconds: Int

    /// 512 MiB: a plugin host maps about 100 MiB (its runtime and the glibc arenas of its
    /// threads), and a plugin that needs more than a few hundred to classify a coin is broken.
    public static let defaultMemoryMiB = 512
    /// An hour of CPU: a host answers a reading with some tens of microseconds of it, so a
    /// healthy one reaches this after tens of millions of coins; one that spins, in an hour.
    public static let defaultCPUSeconds = 3600

    public init(missing: Missing = .required, memoryMiB: Int = SandboxPolicy.defaultMemoryMiB, openFiles: Int = 32, processes: Int = 256,
                readable: [String] = [], cpuSeconds: Int = SandboxPolicy.defaultCPUSeconds) {
        self.missing = missing
        self.cpuSeconds = cpuSeconds
        self.memoryMiB = memoryMiB
        self.openFiles = openFiles
        self.processes = processes
        self.readable = readable
    }
}
