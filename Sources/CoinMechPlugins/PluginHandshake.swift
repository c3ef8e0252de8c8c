import CoinMechPluginABI

/// Calls a plugin's entry function the way the contract says, and checks what it answered
/// before any other function of the plugin is called.
public enum PluginHandshake {
    /// The plugin's struct, as much of it as this host's struct holds, and its metadata; or the
    /// reason to refuse it, naming `path`.
    public static func perform(_ entry: coinmech_plugin_entry_fn, path: String) throws(PluginLoadError) -> (coinmech_plugin, PluginMetadata) {
        // Zeroed, with the host's size: the plugin writes nothing past it.
        var api = coinmech_plugin()
        api.size = UInt32(MemoryLayout<coinmech_plugin>.size)
        let status = entry(PluginABI.hostVersion, &api)
        let found = api.abi_version
        guard PluginABI.major(found) == PluginABI.hostMajor else {
            throw .abiMismatch(path: path, found: found, expected: PluginABI.hostVersion)
        }
        guard PluginABI.minor(found) <= PluginABI.hostMinor else {
            throw .newerMinor(path: path, found: found, host: PluginABI.hostVersion)
        }
        guard status == 0 else { throw .entryRefused(path: path, code: status) }
        guard api.size >= PluginABI.minimumPluginSize else {
            throw .structTooSmall(path: path, size: api.size, expected: PluginABI.minimumPluginSize)
        }
        // Fields past what the plugin wrote are absent, whatever the bytes say.
        let written = Int(api.size)
        if written < MemoryLayout<coinmech_plugin>.size {
            withUnsafeMutableBytes(of: &api) { bytes in
                for index in written..<bytes.count { bytes[index] = 0 }
            }
        }
        for (field, present) in [
            ("name", api.name != nil), ("version", api.version != nil), ("create", api.create != nil),
            ("validate", api.validate != nil), ("destroy", api.destroy != nil),
        ] where !present {
            throw .incompletePlugin(path: path, missing: field)
        }
        // The alloy axis is part of a measured reading: a plugin that judges it takes measured readings.
        if api.reading_kinds & COINMECH_KINDS_ALLOY != 0 {
            guard api.reading_kinds & COINMECH_KINDS_MEASURED != 0 else { throw .alloyWithoutMeasured(path: path) }
            guard PluginABI.minor(found) >= 1 else { throw .alloyBeforeItsABI(path: path, found: found) }
        }
        guard api.reading_kinds & PluginABI.knownKinds & ~COINMECH_KINDS_ALLOY != 0 else { throw .noReadingKinds(path: path, declared: api.reading_kinds) }
        let metadata = PluginMetadata(
            name: String(cString: api.name!), version: String(cString: api.version!),
            license: api.license.map { String(cString: $0) } ?? "", summary: api.description.map { String(cString: $0) } ?? "",
            readingKinds: api.reading_kinds & PluginABI.knownKinds, flags: api.flags, abiVersion: found,
            describes: api.describe != nil, explains: api.explain != nil)
        return (api, metadata)
    }
}
