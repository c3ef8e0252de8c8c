import CoinMechChain
import CoinMechPluginABI

#if canImport(Glibc)
import Glibc
#endif

/// A link whose plugin runs in a `coinmech-plugin-host` process of its own: the chain calls it
/// like any validator, and each call is a round trip over the host's channel within the link's
/// budget. A crash or a hang there costs one reading (returned, naming the link), not the daemon.
public final class IsolatedValidator: Validator, @unchecked Sendable {
    // @unchecked: set once in init; the supervisor guards its own state.
    let supervisor: HostSupervisor
    public let call: ValidatorCall
    /// What the host reported when it first came up: the plugin's metadata and description.
    public let ready: HostWire.Ready

    /// Starts the link's host and waits until the plugin is loaded and the instance created.
    public init(file: PluginFile, spec: LinkSpec, identity: LinkIdentity, health: LinkHealth,
                environment: ChainEnvironment) throws(PluginLoadError) {
        let located = HostLocator.find(configured: environment.isolation.hostExecutable)
        guard let executable = located.path else {
            throw .hostFailed(path: file.sourcePath, message: "no \(HostLocator.executableName) executable (tried \(located.tried.joined(separator: ", "))): install it next to coinmechd, or set plugins.host")
        }
        var user: HostUser?
        if let name = spec.policy.user {
            guard let found = HostUser.named(name) else { throw .hostFailed(path: file.sourcePath, message: "no user '\(name)' to run the plugin host as") }
            user = found
        }
        supervisor = HostSupervisor(
            link: spec.name, file: file, configJSON: spec.configJSON, policy: spec.policy, user: user, executable: executable,
            settings: environment.isolation, identity: identity, health: health, quarantine: environment.quarantine,
            report: environment.report, pluginLog: environment.log)
        ready = try supervisor.start()
        call = ValidatorCall(function: Self.function, context: Unmanaged.passUnretained(supervisor).toOpaque())
    }

    deinit {
        supervisor.stop()
    }

    /// The host's pid while one is up (for tests and status).
    public var hostPID: pid_t? { supervisor.state.withLock { $0.live?.pid } }

    private static let function: ValidatorCall.Function = { context, reading, decision in
        guard let context, let reading, let decision else { return }
        Unmanaged<HostSupervisor>.fromOpaque(context).takeUnretainedValue().validate(reading, decision)
    }
}
