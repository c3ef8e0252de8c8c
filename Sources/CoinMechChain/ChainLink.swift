import CoinMechPluginABI

/// Where a link's code came from, for `chain` listings and ledger fingerprints.
public struct LinkOrigin: Sendable, Hashable, Codable {
    /// Plugin name as the plugin reports it, e.g. "coin-table".
    public var plugin: String
    public var version: String
    /// SHA-256 of the plugin file, hex; empty for links the host provides.
    public var sha256: String
    /// Seconds since 1970 when the plugin was loaded.
    public var loadedAt: Double
    /// The instance's own description (JSON text), if the plugin gives one.
    public var description: String?
    /// The plugin's license (SPDX) and its one-sentence summary, as it reports them.
    public var license: String
    public var summary: String
    /// The reading kinds the plugin handles (`COINMECH_KINDS_*`).
    public var readingKinds: UInt32
    /// The ABI version word the plugin was built for (major << 16 | minor).
    public var abiVersion: UInt32

    public init(plugin: String, version: String, sha256: String = "", loadedAt: Double = 0, description: String? = nil,
                license: String = "", summary: String = "", readingKinds: UInt32 = COINMECH_KINDS_MEASURED,
                abiVersion: UInt32 = COINMECH_PLUGIN_ABI_VERSION) {
        self.plugin = plugin
        self.version = version
        self.sha256 = sha256
        self.loadedAt = loadedAt
        self.description = description
        self.license = license
        self.summary = summary
        self.readingKinds = readingKinds
        self.abiVersion = abiVersion
    }

    /// The reading kinds by name: "measured", "coin_id".
    public var readingKindNames: [String] {
        var names: [String] = []
        if readingKinds & COINMECH_KINDS_MEASURED != 0 { names.append("measured") }
        if readingKinds & COINMECH_KINDS_COIN_ID != 0 { names.append("coin_id") }
        if readingKinds & COINMECH_KINDS_ALLOY != 0 { names.append("alloy") }
        return names
    }
}

/// How a link runs: in the daemon's process or in a plugin host of its own, and how long one
/// call may take.
public struct LinkPolicy: Sendable, Hashable {
    public enum Isolation: String, Sendable, Hashable, CaseIterable {
        /// Called directly: fastest; a crash takes the daemon with it (and quarantines the link
        /// at the next start); a hang is noticed, not stopped.
        case inProcess = "in-process"
        /// In a `coinmech-plugin-host` process of its own: a crash or a hang costs one reading.
        case process
    }

    public var isolation: Isolation
    /// Longest a call may take (wall clock).
    public var budgetNanoseconds: UInt64
    /// The user an isolated link's host runs as (nil: the daemon's).
    public var user: String?
    /// What an isolated link's host may use (ignored in process).
    public var sandbox: SandboxPolicy

    /// 10 ms: far below a serial mech's 50 ms, far above a shipped plugin's 30 ns, and above the
    /// few milliseconds a loaded two-core machine can take to schedule a woken plugin host.
    public static let defaultBudgetNanoseconds: UInt64 = 10_000_000

    public init(isolation: Isolation = .inProcess, budgetNanoseconds: UInt64 = LinkPolicy.defaultBudgetNanoseconds, user: String? = nil,
                sandbox: SandboxPolicy = SandboxPolicy()) {
        self.isolation = isolation
        self.budgetNanoseconds = budgetNanoseconds
        self.user = user
        self.sandbox = sandbox
    }
}

/// One named link of a chain: a validator instance, where it came from, how it runs, its
/// counters and its health.
public final class ChainLink: Sendable {
    /// The link's name from configuration (defaults to the plugin name).
    public let name: String
    public let origin: LinkOrigin
    public let validator: any Validator
    public let policy: LinkPolicy
    public let statistics = LinkStatistics()
    public let health: LinkHealth

    public init(name: String, origin: LinkOrigin, validator: any Validator, policy: LinkPolicy = LinkPolicy(), health: LinkHealth = LinkHealth()) {
        self.name = name
        self.origin = origin
        self.validator = validator
        self.policy = policy
        self.health = health
    }
}
