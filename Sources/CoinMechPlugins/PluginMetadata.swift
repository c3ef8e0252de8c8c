import CoinMechChain
import CoinMechPluginABI

/// What a plugin says about itself in its entry, copied out of C.
public struct PluginMetadata: Sendable, Hashable, Codable {
    public var name: String
    public var version: String
    /// SPDX identifier, e.g. "MIT".
    public var license: String
    /// One sentence for people.
    public var summary: String
    /// `COINMECH_KINDS_*`.
    public var readingKinds: UInt32
    /// `COINMECH_PLUGIN_*`.
    public var flags: UInt32
    /// The version word it was built for.
    public var abiVersion: UInt32
    /// Which optional functions it fills.
    public var describes: Bool
    public var explains: Bool

    public init(name: String, version: String, license: String, summary: String, readingKinds: UInt32, flags: UInt32,
                abiVersion: UInt32, describes: Bool, explains: Bool) {
        self.name = name
        self.version = version
        self.license = license
        self.summary = summary
        self.readingKinds = readingKinds
        self.flags = flags
        self.abiVersion = abiVersion
        self.describes = describes
        self.explains = explains
    }

    /// Distinct instances may decide at the same time on different threads.
    public var concurrentInstances: Bool { flags & UInt32(COINMECH_PLUGIN_CONCURRENT_INSTANCES) != 0 }
}

extension LinkOrigin {
    /// The origin of a link built from a plugin that describes itself with `metadata`.
    public init(metadata: PluginMetadata, sha256: String, loadedAt: Double, description: String?) {
        self.init(plugin: metadata.name, version: metadata.version, sha256: sha256, loadedAt: loadedAt, description: description,
                  license: metadata.license, summary: metadata.summary, readingKinds: metadata.readingKinds, abiVersion: metadata.abiVersion)
    }
}
