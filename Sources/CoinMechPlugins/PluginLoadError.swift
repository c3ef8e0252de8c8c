/// Why a plugin could not be loaded or instantiated. Every case names the file.
public enum PluginLoadError: Error, Equatable, Sendable, CustomStringConvertible {
    /// No plugin file by that name in the plugin directory (the paths tried are listed).
    case notFound(name: String, tried: [String])
    case unreadable(path: String, reason: String)
    /// The file or its directory could be changed by someone other than root and the daemon's user.
    case unsafePermissions(path: String, reason: String)
    case notSharedObject(path: String)
    case dlopenFailed(path: String, message: String)
    case missingEntrySymbol(path: String)
    case entryRefused(path: String, code: Int32)
    case abiMismatch(path: String, found: UInt32, expected: UInt32)
    case structTooSmall(path: String, size: UInt32, expected: UInt32)
    case incompletePlugin(path: String, missing: String)
    case createFailed(path: String, plugin: String, message: String)
    case copyFailed(path: String, reason: String)

    public var description: String {
        switch self {
        case .notFound(let name, let tried):
            "plugin '\(name)' not found (tried \(tried.joined(separator: ", ")))"
        case .unreadable(let path, let reason):
            "\(path): cannot read plugin: \(reason)"
        case .unsafePermissions(let path, let reason):
            "\(path): refusing to load plugin: \(reason)"
        case .notSharedObject(let path):
            "\(path): not a shared object (no ELF header)"
        case .dlopenFailed(let path, let message):
            "\(path): dlopen failed: \(message)"
        case .missingEntrySymbol(let path):
            "\(path): no entry symbol 'coinmech_plugin_entry': not a CoinMech plugin"
        case .entryRefused(let path, let code):
            "\(path): plugin refused host ABI \(hostABIVersion) (entry returned \(code))"
        case .abiMismatch(let path, let found, let expected):
            "\(path): plugin ABI version \(found) where \(expected) was expected"
        case .structTooSmall(let path, let size, let expected):
            "\(path): plugin struct is \(size) bytes where at least \(expected) were expected"
        case .incompletePlugin(let path, let missing):
            "\(path): plugin did not fill '\(missing)'"
        case .createFailed(let path, let plugin, let message):
            "\(path): plugin '\(plugin)' create failed: \(message)"
        case .copyFailed(let path, let reason):
            "\(path): cannot make private copy: \(reason)"
        }
    }
}
