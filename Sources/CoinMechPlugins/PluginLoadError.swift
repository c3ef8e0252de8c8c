/// Why a plugin could not be loaded or instantiated. Every case names the file.
public enum PluginLoadError: Error, Equatable, Sendable, Codable, CustomStringConvertible {
    /// No plugin file by that name in the plugin directory (the paths tried are listed).
    case notFound(name: String, tried: [String])
    case unreadable(path: String, reason: String)
    /// The file or its directory could be changed by someone other than root and the daemon's user.
    case unsafePermissions(path: String, reason: String)
    case notSharedObject(path: String)
    case dlopenFailed(path: String, message: String)
    case missingEntrySymbol(path: String)
    case entryRefused(path: String, code: Int32)
    /// Another major ABI version than the host's (`found`, `expected`: version words).
    case abiMismatch(path: String, found: UInt32, expected: UInt32)
    /// The host's major, but a higher minor than the host knows.
    case newerMinor(path: String, found: UInt32, host: UInt32)
    case structTooSmall(path: String, size: UInt32, expected: UInt32)
    case incompletePlugin(path: String, missing: String)
    /// The plugin declares no reading kind, or only kinds this host does not know.
    case noReadingKinds(path: String, declared: UInt32)
    /// COINMECH_KINDS_ALLOY without COINMECH_KINDS_MEASURED: the axis is part of a measured reading.
    case alloyWithoutMeasured(path: String)
    /// COINMECH_KINDS_ALLOY from a plugin built for an ABI before 2.1, whose reading has no alloy fields.
    case alloyBeforeItsABI(path: String, found: UInt32)
    case createFailed(path: String, plugin: String, message: String)
    case copyFailed(path: String, reason: String)
    /// An isolated link's plugin host could not be started, or broke the host protocol.
    case hostFailed(path: String, message: String)
    /// An isolated link's plugin host died while loading or creating the instance.
    case hostCrashed(path: String, message: String)
    /// A link that requires the sandbox (`sandbox: required`) on a machine that lacks a layer.
    case sandboxUnavailable(path: String, missing: [String])
    /// The plugin made a system call its sandbox forbids while it was loaded or created.
    case sandboxViolation(path: String, syscall: String)

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
            "\(path): plugin refused host ABI \(PluginABI.text(hostABIVersion)) (entry returned \(code))"
        case .abiMismatch(let path, let found, let expected):
            if found == 0 {
                "\(path): plugin wrote no ABI version: not built against coinmech_plugin.h"
            } else if PluginABI.major(found) < PluginABI.major(expected) {
                "\(path): plugin built for plugin ABI \(PluginABI.text(found)); this coinmechd speaks ABI \(PluginABI.text(expected)): rebuild it against this coinmech_plugin.h (docs/PLUGINS.md, 'Porting a plugin from ABI 1')"
            } else {
                "\(path): plugin built for plugin ABI \(PluginABI.text(found)); this coinmechd speaks ABI \(PluginABI.text(expected)): upgrade coinmechd, or use a build of the plugin for ABI \(PluginABI.major(expected))"
            }
        case .newerMinor(let path, let found, let host):
            "\(path): plugin needs plugin ABI \(PluginABI.text(found)); this coinmechd speaks ABI \(PluginABI.text(host)), an older minor: upgrade coinmechd, or rebuild the plugin against this coinmech_plugin.h"
        case .structTooSmall(let path, let size, let expected):
            "\(path): plugin struct is \(size) bytes where at least \(expected) were expected"
        case .incompletePlugin(let path, let missing):
            "\(path): plugin did not fill '\(missing)'"
        case .noReadingKinds(let path, let declared):
            "\(path): plugin declares no reading kind this coinmechd knows (reading_kinds 0x\(String(declared, radix: 16))): set COINMECH_KINDS_MEASURED"
        case .alloyWithoutMeasured(let path):
            "\(path): plugin declares COINMECH_KINDS_ALLOY without COINMECH_KINDS_MEASURED: the alloy axis is part of a measured reading; declare both"
        case .alloyBeforeItsABI(let path, let found):
            "\(path): plugin declares COINMECH_KINDS_ALLOY but was built for plugin ABI \(PluginABI.text(found)), whose reading has no alloy fields: rebuild it against a coinmech_plugin.h of ABI 2.1 or later"
        case .createFailed(let path, let plugin, let message):
            "\(path): plugin '\(plugin)' create failed: \(message)"
        case .copyFailed(let path, let reason):
            "\(path): cannot make private copy: \(reason)"
        case .hostFailed(let path, let message):
            "\(path): plugin host: \(message)"
        case .hostCrashed(let path, let message):
            "\(path): the plugin host crashed: \(message)"
        case .sandboxUnavailable(let path, let missing):
            "\(path): this link requires the plugin sandbox (sandbox: required), and this machine lacks part of it: "
                + missing.joined(separator: "; ") + ". Run it on a kernel with Landlock and seccomp, or set sandbox: warn for the link to run it with the layers there are"
        case .sandboxViolation(let path, let syscall):
            "\(path): the plugin made a system call its sandbox forbids (\(syscall)); its host was stopped"
        }
    }
}
