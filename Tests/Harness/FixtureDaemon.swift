#if canImport(Glibc)
import Glibc
#endif

/// The coinmechd configuration the crash suite, the chaos runs and the end-to-end tests start a
/// cabinet with, spelled once: state, runtime and cache beside the file, and the control socket
/// open to the user running the test (collect, inhibit, payouts).
public enum FixtureDaemon {
    /// The user this process runs as.
    public static var user: String { String(cString: getpwuid(getuid())!.pointee.pw_name) }

    /// `source`: the source's YAML value (flow style, or block style on the lines after);
    /// `chain`: one of `FixtureChains`.
    public static func configuration(source: String, chain: String, logLevel: String = "info") -> String {
        ["log_level: \(logLevel)", "source:" + (source.hasPrefix("\n") ? source : " " + source), "state_dir: state", "runtime_dir: run", "cache_dir: cache",
         "socket: {control_users: [\(user)]}", chain].joined(separator: "\n") + "\n"
    }
}
