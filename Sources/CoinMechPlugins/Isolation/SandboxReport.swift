/// Which sandbox layers a plugin host put in force around its plugin, as it reports them when
/// ready: logged at start, shown per link by `coinctl chain`.
public struct SandboxReport: Sendable, Hashable, Codable {
    /// Its own network namespace: no interface but a loopback that is down.
    public var networkNamespace = false
    /// `RLIMIT_AS`, `RLIMIT_NOFILE`, `RLIMIT_NPROC`, and no core file.
    public var limits = false
    /// The Landlock ABI version in force (0: none).
    public var landlockABI = 0
    /// The system-call allow-list.
    public var seccomp = false
    /// Why each missing layer is missing, in words an operator can act on.
    public var missing: [String] = []

    public init() {}

    /// "landlock v3, seccomp, limits, network namespace" (or "none").
    public var layers: String {
        var names: [String] = []
        if landlockABI > 0 { names.append("landlock v\(landlockABI)") }
        if seccomp { names.append("seccomp") }
        if limits { names.append("limits") }
        if networkNamespace { names.append("network namespace") }
        return names.isEmpty ? "none" : names.joined(separator: ", ")
    }

    /// The layers a link with `sandbox: required` cannot run without (the network namespace is
    /// extra: seccomp forbids `socket`).
    public var lacksRequired: Bool { landlockABI == 0 || !seccomp || !limits }
}
