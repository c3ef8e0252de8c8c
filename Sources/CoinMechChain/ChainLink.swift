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

    public init(plugin: String, version: String, sha256: String = "", loadedAt: Double = 0, description: String? = nil) {
        self.plugin = plugin
        self.version = version
        self.sha256 = sha256
        self.loadedAt = loadedAt
        self.description = description
    }
}

/// One named link of a chain: a validator instance, where it came from, and its counters.
public final class ChainLink: Sendable {
    /// The link's name from configuration (defaults to the plugin name).
    public let name: String
    public let origin: LinkOrigin
    public let validator: any Validator
    public let statistics = LinkStatistics()

    public init(name: String, origin: LinkOrigin, validator: any Validator) {
        self.name = name
        self.origin = origin
        self.validator = validator
    }
}
