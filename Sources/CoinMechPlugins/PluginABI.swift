import CoinMechPluginABI

/// The plugin ABI version this host speaks, and version words taken apart (the header's
/// function-like macros do not reach Swift).
public enum PluginABI {
    /// (major << 16) | minor.
    public static let hostVersion: UInt32 = COINMECH_PLUGIN_ABI_VERSION
    public static let hostMajor: UInt32 = COINMECH_PLUGIN_ABI_MAJOR
    public static let hostMinor: UInt32 = COINMECH_PLUGIN_ABI_MINOR
    /// Reading kinds this host knows (ALLOY qualifies MEASURED: the plugin judges the alloy axis).
    public static let knownKinds: UInt32 = COINMECH_KINDS_MEASURED | COINMECH_KINDS_COIN_ID | COINMECH_KINDS_ALLOY
    /// Plugin flags this host knows.
    public static let knownFlags = UInt32(COINMECH_PLUGIN_CONCURRENT_INSTANCES)
    /// The plugin struct of ABI 2.0 ends after `destroy`: anything shorter is incomplete.
    public static let minimumPluginSize = UInt32(MemoryLayout<coinmech_plugin>.offset(of: \.describe)!)

    /// ABI 1 wrote a plain 1: its major is 1.
    public static func major(_ version: UInt32) -> UInt32 { version < 0x10000 ? version : version >> 16 }
    public static func minor(_ version: UInt32) -> UInt32 { version < 0x10000 ? 0 : version & 0xFFFF }
    /// "2.0" (ABI 1: "1").
    public static func text(_ version: UInt32) -> String { version < 0x10000 ? "\(version)" : "\(major(version)).\(minor(version))" }
}

/// The ABI version this host speaks (major << 16 | minor).
public let hostABIVersion: UInt32 = PluginABI.hostVersion
