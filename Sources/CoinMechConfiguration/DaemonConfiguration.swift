import CoinMechChain
import CoinMechCore
import CoinMechGPIO
import CoinMechHotplug
import CoinMechModel
import CoinMechPlugins
import CoinMechSerial
import CoinMechSettings
import CoinMechSources
import Foundation
import Logging

/// Everything `coinmechd` reads from its configuration file (docs/CONFIG.md).
public struct DaemonConfiguration: Sendable {
    public typealias Source = SourceConfiguration

    public struct Socket: Sendable, Equatable {
        public var path: String
        public var mode: UInt32
        public var group: String?
        public var controlUsers: [String]
        public var controlGroups: [String]
        /// Events a subscriber may have waiting before it is disconnected with `overflow`.
        public var maxQueuedEvents: Int
        /// Connections served at once (peers allowed control get a few more); one more is refused.
        public var maxClients = 64
        /// A connection that sends no request this long after it opened, or leaves its replies
        /// unread this long while requests wait, is closed.
        public var idleTimeoutSeconds = 60.0
    }

    /// A chain link with the lines it came from, so errors can point at them.
    public struct Link: Sendable, Equatable {
        public var spec: LinkSpec
        public var line: Int?
        public var configLine: Int?
        public var nameLine: Int?
    }

    /// The file this came from.
    public var file: String
    public var logLevel: Logger.Level
    public var source: Source
    public var pluginDirectory: String
    public var stateDirectory: String
    public var runtimeDirectory: String
    /// Private, content-addressed copies of the plugins, on a filesystem that allows
    /// executable mappings (`/run` is often mounted `noexec`).
    public var cacheDirectory: String
    public var socket: Socket
    public var chain: [Link]
    /// Cap on the ledger's size in MiB (nil: the disk is the limit).
    public var ledgerMaxSizeMiB: Double?
    /// How links run when they do not say (`plugins:`), and how isolated ones are supervised.
    public var plugins: PluginSettings

    public static let defaultPath = "/etc/coinmech/coinmechd.yaml"
    static let topKeys: Set<String> = ["log_level", "source", "chain", "plugin_dir", "state_dir", "runtime_dir", "cache_dir", "socket", "ledger", "plugins"]

    /// Reads and checks `path`. Relative paths in it are relative to the file's directory.
    /// `pluginDirectory` overrides `plugin_dir` (the demo and tests use the build's own plugins).
    public static func load(path: String, pluginDirectory override: String? = nil) throws(SettingsError) -> DaemonConfiguration {
        let table = try SettingsTable.load(path: path)
        return try parse(table, pluginDirectory: override)
    }

    public static func parse(_ table: SettingsTable, pluginDirectory override: String? = nil) throws(SettingsError) -> DaemonConfiguration {
        try table.rejectUnknownKeys(topKeys)
        let base = URL(fileURLWithPath: table.file).deletingLastPathComponent().path
        func resolve(_ path: String) -> String { path.hasPrefix("/") ? path : URL(fileURLWithPath: path, relativeTo: URL(fileURLWithPath: base + "/")).standardizedFileURL.path }

        let levelName = try table.string("log_level") ?? "info"
        guard let level = Logger.Level(rawValue: levelName) else {
            throw table.error("log_level", "must be one of trace, debug, info, notice, warning, error, critical")
        }
        let source = try SourceConfiguration.parse(table, resolve: resolve)

        let configuredPlugins = resolve(try table.string("plugin_dir") ?? "/usr/lib/coinmech/plugins")
        let pluginDirectory = override ?? configuredPlugins
        let stateDirectory = resolve(try table.string("state_dir") ?? "/var/lib/coinmech")
        let runtimeDirectory = resolve(try table.string("runtime_dir") ?? "/run/coinmech")
        let cacheDirectory = resolve(try table.string("cache_dir") ?? "/var/cache/coinmech")
        let socket = try Socket.parse(try table.table("socket"), runtimeDirectory: runtimeDirectory, resolve: resolve)
        var ledgerMax: Double?
        if let ledger = try table.table("ledger") {
            try ledger.rejectUnknownKeys(["max_size_mb"])
            if let size = try ledger.double("max_size_mb") {
                guard size >= 0.05 else { throw ledger.error("max_size_mb", "must be at least 0.05") }
                ledgerMax = size
            }
        }
        let plugins = try PluginSettings.parse(try table.table("plugins"), resolve: resolve)
        let chain = try Link.parse(table, plugins: plugins, loader: PluginLoader(directory: pluginDirectory, runtimeDirectory: cacheDirectory),
                                   stateDirectory: stateDirectory)
        return DaemonConfiguration(
            file: table.file, logLevel: level, source: source, pluginDirectory: pluginDirectory, stateDirectory: stateDirectory,
            runtimeDirectory: runtimeDirectory, cacheDirectory: cacheDirectory, socket: socket, chain: chain, ledgerMaxSizeMiB: ledgerMax,
            plugins: plugins)
    }

    /// A chain build error as a settings error, pointing at the failing link's lines.
    public func settingsError(for error: ChainBuildError) -> SettingsError {
        let index = error.position - 1
        if case .noCurrency = error.cause { return SettingsError(file: file, line: nil, key: "source.currencies", message: error.description) }
        guard chain.indices.contains(index) else { return SettingsError(file: file, line: nil, key: "chain", message: error.description) }
        let link = chain[index]
        switch error.cause {
        case .plugin(.createFailed(_, _, let message)):
            return SettingsError(file: file, line: link.configLine ?? link.line, key: "chain[\(index)].config", message: "plugin '\(link.spec.plugin)' refused its configuration: \(message)")
        case .plugin(let cause):
            return SettingsError(file: file, line: link.line, key: "chain[\(index)].plugin", message: cause.description)
        case .reservedName:
            return SettingsError(file: file, line: link.nameLine ?? link.line, key: "chain[\(index)].name", message: error.description)
        default:
            return SettingsError(file: file, line: link.line, key: "chain[\(index)]", message: error.description)
        }
    }
}
