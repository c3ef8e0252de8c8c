import CoinMechChain
import CoinMechPlugins
import CoinMechSettings

extension DaemonConfiguration {
    /// The `plugins:` table: defaults for the chain's links, and the plugin hosts' supervision.
    public struct PluginSettings: Sendable, Equatable {
        /// `auto`: the shipped plugins in process, any other in a plugin host of its own.
        public enum DefaultIsolation: String, Sendable, Equatable, CaseIterable {
            case auto
            case inProcess = "in-process"
            case process
        }

        public var isolation: DefaultIsolation = .auto
        public var budgetNanoseconds: UInt64 = LinkPolicy.defaultBudgetNanoseconds
        public var supervision = IsolationSettings()
        /// `sandbox:` for every isolated link (nil: required for plugins outside the shipped
        /// set, a warning for the shipped ones).
        public var sandbox: SandboxPolicy.Missing?
        public var memoryMiB = SandboxPolicy.defaultMemoryMiB

        /// The sandbox an isolated link of `plugin` gets when its entry does not say.
        public func sandbox(forPlugin plugin: String) -> SandboxPolicy {
            SandboxPolicy(missing: sandbox ?? (ShippedPlugins.names.contains(plugin) ? .warn : .required), memoryMiB: memoryMiB)
        }

        /// How a link of `plugin` runs when its entry names no isolation.
        public func isolation(forPlugin plugin: String) -> LinkPolicy.Isolation {
            switch isolation {
            case .auto: ShippedPlugins.names.contains(plugin) ? .inProcess : .process
            case .inProcess: .inProcess
            case .process: .process
            }
        }
    }
}

extension DaemonConfiguration.PluginSettings {
    /// Reads the `plugins:` table (its defaults when there is none).
    static func parse(_ settings: SettingsTable?, resolve: (String) -> String) throws(SettingsError) -> Self {
        var plugins = Self()
        guard let settings else { return plugins }
        try settings.rejectUnknownKeys(["isolation", "budget_ms", "max_crashes", "crash_window_s", "start_timeout_s", "host", "sandbox", "memory_mb"])
        if let isolation = try settings.string("isolation") {
            guard let value = DefaultIsolation(rawValue: isolation) else {
                throw settings.error("isolation", "must be auto (shipped plugins in process, others isolated), in-process or process")
            }
            plugins.isolation = value
        }
        if let budget = try settings.double("budget_ms") { plugins.budgetNanoseconds = try DaemonConfiguration.budget(budget, in: settings) }
        if let crashes = try settings.int("max_crashes") {
            guard (1...100).contains(crashes) else { throw settings.error("max_crashes", "must be between 1 and 100") }
            plugins.supervision.maxCrashes = crashes
        }
        if let window = try settings.double("crash_window_s") {
            guard (1...86_400).contains(window) else { throw settings.error("crash_window_s", "must be between 1 and 86400") }
            plugins.supervision.crashWindowSeconds = window
        }
        if let timeout = try settings.double("start_timeout_s") {
            guard (0.1...600).contains(timeout) else { throw settings.error("start_timeout_s", "must be between 0.1 and 600") }
            plugins.supervision.startTimeoutSeconds = timeout
        }
        if let host = try settings.string("host") { plugins.supervision.hostExecutable = resolve(host) }
        plugins.sandbox = try DaemonConfiguration.sandbox(in: settings)
        plugins.memoryMiB = try DaemonConfiguration.memory(in: settings) ?? plugins.memoryMiB
        return plugins
    }
}

extension DaemonConfiguration {
    /// `sandbox: required | warn | off`, checked.
    static func sandbox(in table: SettingsTable) throws(SettingsError) -> SandboxPolicy.Missing? {
        guard let text = try table.string("sandbox") else { return nil }
        guard let value = SandboxPolicy.Missing(rawValue: text) else {
            throw table.error("sandbox", "must be required (a sandbox layer this machine lacks refuses the link), warn (the link runs with the layers there are) or off (none: for measuring or debugging)")
        }
        return value
    }

    /// `memory_mb`, checked: the plugin host's address space, 64 MiB to 64 GiB.
    static func memory(in table: SettingsTable) throws(SettingsError) -> Int? {
        guard let megabytes = try table.int("memory_mb") else { return nil }
        guard (64...65_536).contains(megabytes) else { throw table.error("memory_mb", "must be between 64 and 65536 (MiB of address space for the plugin host)") }
        return megabytes
    }

    /// A link's time budget in ms, checked: a call may take 0.1 ms to 10 s.
    static func budget(_ milliseconds: Double, in table: SettingsTable) throws(SettingsError) -> UInt64 {
        guard (0.1...10_000).contains(milliseconds) else { throw table.error("budget_ms", "must be between 0.1 and 10000 (milliseconds per call)") }
        return UInt64(milliseconds * 1_000_000)
    }
}
