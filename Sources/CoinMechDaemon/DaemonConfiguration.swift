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

    public static let defaultPath = "/etc/coinmech/coinmechd.yaml"
    /// A GPIO line's offset on its chip (the kernel's is a 32-bit number; chips have far fewer).
    static let lineOffsets = 0...65_535
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

        guard let sourceTable = try table.table("source") else { throw table.error("missing table 'source' (kind, device, baud)") }
        try sourceTable.rejectUnknownKeys([
            "kind", "device", "baud", "name", "file", "chip", "speed", "pulse", "gates", "scale", "accept_gate", "inhibit", "usb",
            "deadline_ms", "commit_allowance_ms", "confirmations", "confirm_window_ms", "address", "checksum", "echo", "poll_interval_ms", "positions",
            "currencies", "tokens",
        ])
        let kindName = try sourceTable.string("kind") ?? "serial"
        let name = try sourceTable.string("name") ?? kindName
        guard !name.isEmpty, name.utf8.count <= SourceName.capacity else {
            throw sourceTable.error("name", "must be 1 to \(SourceName.capacity) bytes, got \(name.utf8.count)")
        }
        let kind: Source.Kind
        var hotplug: DeviceMatch?
        if kindName != "cctalk" {
            for key in Self.cctalkOnlyKeys where sourceTable.contains(key) { throw sourceTable.error(key, "applies to cctalk sources only") }
        }
        switch kindName {
        case "serial":
            guard let device = try sourceTable.string("device"), !device.isEmpty else { throw sourceTable.error("device", "is required") }
            let baud = try sourceTable.int("baud") ?? 9600
            guard [1200, 2400, 4800, 9600, 19200, 38400, 57600, 115200].contains(baud) else {
                throw sourceTable.error("baud", "must be one of 1200, 2400, 4800, 9600, 19200, 38400, 57600, 115200")
            }
            var serial = Source.Serial(device: resolve(device), baud: baud)
            hotplug = .serialPath(serial.device)
            serial.confirmations = try sourceTable.bool("confirmations") ?? true
            if let window = try sourceTable.double("confirm_window_ms") {
                guard (50...60_000).contains(window) else { throw sourceTable.error("confirm_window_ms", "must be between 50 and 60000") }
                serial.confirmationWindow = .nanoseconds(Int64(window * 1e6))
            }
            if let usb = try sourceTable.table("usb") {
                try usb.rejectUnknownKeys(["vendor", "product", "serial"])
                guard let vendor = try usb.string("vendor"), let product = try usb.string("product") else {
                    throw usb.error("vendor and product (hex, as udevadm shows them) are required")
                }
                hotplug = .usb(vendor: vendor, product: product, serial: try usb.string("serial"))
                serial.followsDevnode = true
            }
            kind = .serial(serial)
        case "cctalk":
            kind = .cctalk(try Self.cctalk(sourceTable, resolve: resolve))
            if let device = kind.cctalkDevice { hotplug = .serialPath(device) }
        case "gpio", "gpio-replay":
            let key = kindName == "gpio" ? "chip" : "file"
            guard let device = try sourceTable.string(key), !device.isEmpty else { throw sourceTable.error(key, "is required for kind \(kindName)") }
            for key in ["confirmations", "confirm_window_ms"] where sourceTable.keys.contains(key) {
                throw sourceTable.error(key, "applies to serial mechs only: a GPIO mech's coin is credited with its answer")
            }
            var pulseSettings: PulseDecoder.Settings?
            var gateSettings: LightGateDecoder.Settings?
            if let pulse = try sourceTable.table("pulse") {
                try pulse.rejectUnknownKeys(["line", "active_low", "min_pulse_ms", "gap_ms", "highest_channel"])
                guard let line = try pulse.int("line", in: Self.lineOffsets) else { throw pulse.error("line", "is required: the counting line's offset") }
                pulseSettings = PulseDecoder.Settings(
                    line: UInt32(line), activeLow: try pulse.bool("active_low") ?? true,
                    minimumPulseMilliseconds: try pulse.double("min_pulse_ms", in: 0...1_000) ?? 10, gapMilliseconds: try pulse.double("gap_ms", in: 1...10_000) ?? 150,
                    highestChannel: UInt32(try pulse.int("highest_channel", in: 1...255) ?? 16))
            }
            if let gates = try sourceTable.table("gates") {
                try gates.rejectUnknownKeys(["a", "b", "distance_mm", "active_low", "min_occlusion_ms"])
                guard let a = try gates.int("a", in: Self.lineOffsets), let b = try gates.int("b", in: Self.lineOffsets), a != b else {
                    throw gates.error("a and b, the two gates' line offsets, are required and must differ")
                }
                guard let distance = try gates.double("distance_mm"), distance > 0 else { throw gates.error("distance_mm", "is required and must be positive") }
                gateSettings = LightGateDecoder.Settings(
                    gateA: UInt32(a), gateB: UInt32(b), distanceMM: distance, activeLow: try gates.bool("active_low") ?? true,
                    minimumOcclusionMilliseconds: try gates.double("min_occlusion_ms", in: 0...1_000) ?? 0.5)
            }
            let decoding: Source.Decoding
            switch (pulseSettings, gateSettings) {
            case (let pulse?, nil): decoding = .pulse(pulse)
            case (nil, let gates?): decoding = .gates(gates)
            default: throw sourceTable.error("a \(kindName) source needs exactly one of 'pulse' {line: N} or 'gates' {a, b, distance_mm}")
            }
            if kindName == "gpio-replay" {
                var speed = 1.0
                if let configured = try sourceTable.double("speed") {
                    guard configured > 0, configured <= 1000 else { throw sourceTable.error("speed", "must be above 0 and at most 1000") }
                    speed = configured
                }
                kind = .gpioReplay(Source.Replay(file: resolve(device), speed: speed, decoding: decoding))
            } else {
                var gpio = Source.GPIO(chip: device, decoding: decoding)
                hotplug = .gpioChip(label: device)
                if let scale = try sourceTable.table("scale") {
                    try scale.rejectUnknownKeys(["data", "clock", "tare", "counts_per_gram"])
                    guard let data = try scale.int("data", in: Self.lineOffsets), let clock = try scale.int("clock", in: Self.lineOffsets),
                          let perGram = try scale.double("counts_per_gram"), perGram != 0 else {
                        throw scale.error("data, clock and counts_per_gram (from a calibration) are required")
                    }
                    gpio.scale = Source.Scale(data: UInt32(data), clock: UInt32(clock),
                                              decoder: HX711Decoder(tare: Int32(clamping: try scale.int("tare") ?? 0), countsPerGram: perGram))
                }
                if let gate = try sourceTable.table("accept_gate") {
                    try gate.rejectUnknownKeys(["line", "pulse_ms"])
                    guard let line = try gate.int("line", in: Self.lineOffsets) else { throw gate.error("line", "is required") }
                    gpio.acceptGate = Source.Output(line: UInt32(line), pulseMilliseconds: try gate.double("pulse_ms", in: 1...10_000) ?? 80, activeLow: false)
                }
                if let inhibit = try sourceTable.table("inhibit") {
                    try inhibit.rejectUnknownKeys(["line", "active_low"])
                    guard let line = try inhibit.int("line", in: Self.lineOffsets) else { throw inhibit.error("line", "is required") }
                    gpio.inhibit = Source.Output(line: UInt32(line), pulseMilliseconds: 0, activeLow: try inhibit.bool("active_low") ?? false)
                }
                kind = .gpio(gpio)
            }
        default:
            throw sourceTable.error("kind", "unknown source kind '\(kindName)' (known: serial, gpio, gpio-replay, cctalk)")
        }
        var source = Source(name: name, kind: kind, hotplug: hotplug)
        (source.coins, source.currenciesConfigured) = try CabinetCoinsSettings.parse(sourceTable)
        // The serial protocol's mech returns a coin it hears nothing about within 50 ms; GPIO
        // mechs have no such protocol, so only a configured deadline applies to them.
        if let deadline = try sourceTable.double("deadline_ms") ?? (kindName == "serial" ? 50 : nil) {
            guard (5...60_000).contains(deadline) else { throw sourceTable.error("deadline_ms", "must be between 5 and 60000") }
            let allowance = try sourceTable.double("commit_allowance_ms") ?? min(10, deadline / 2)
            guard allowance >= 0, allowance < deadline else {
                throw sourceTable.error("commit_allowance_ms", "must be at least 0 and below deadline_ms (\(deadline))")
            }
            if case .serial(let serial) = kind {
                // An answer's bytes take time on the line, and the deadline covers them too.
                // (An answer with a six-digit device sequence number: 18 bytes.)
                let transit = LineTiming(baud: serial.baud, answerFraming: SerialFrame.decisionFraming).answerTransit(deviceSeq: 123_456).milliseconds
                guard allowance + transit < deadline else {
                    throw sourceTable.error("deadline_ms", "at \(serial.baud) baud an answer takes \(String(format: "%.0f", transit)) ms on the line, which with commit_allowance_ms \(String(format: "%g", allowance)) leaves no time to decide within \(String(format: "%g", deadline)) ms; set deadline_ms to how long your mech waits")
                }
            }
            source.answerDeadline = AnswerDeadline(deadlineMilliseconds: deadline, commitAllowanceMilliseconds: allowance)
        } else if try sourceTable.double("commit_allowance_ms") != nil {
            throw sourceTable.error("commit_allowance_ms", "needs deadline_ms: this source kind has no answer deadline unless one is set")
        }

        let configuredPlugins = resolve(try table.string("plugin_dir") ?? "/usr/lib/coinmech/plugins")
        let pluginDirectory = override ?? configuredPlugins
        let stateDirectory = resolve(try table.string("state_dir") ?? "/var/lib/coinmech")
        let runtimeDirectory = resolve(try table.string("runtime_dir") ?? "/run/coinmech")
        let cacheDirectory = resolve(try table.string("cache_dir") ?? "/var/cache/coinmech")

        var socket = Socket(path: "\(runtimeDirectory)/coinmechd.sock", mode: 0o660, group: nil, controlUsers: ["root"], controlGroups: [], maxQueuedEvents: 1024)
        if let socketTable = try table.table("socket") {
            try socketTable.rejectUnknownKeys(["path", "mode", "group", "control_users", "control_groups", "max_queued_events"])
            if let path = try socketTable.string("path") { socket.path = resolve(path) }
            if let mode = try socketTable.string("mode") {
                guard let value = UInt32(mode, radix: 8), value <= 0o777 else { throw socketTable.error("mode", "must be an octal file mode such as \"0660\"") }
                socket.mode = value
            }
            socket.group = try socketTable.string("group")
            socket.controlUsers = try socketTable.strings("control_users") ?? socket.controlUsers
            socket.controlGroups = try socketTable.strings("control_groups") ?? socket.controlGroups
            if let queued = try socketTable.int("max_queued_events") {
                guard (16...1_000_000).contains(queued) else { throw socketTable.error("max_queued_events", "must be between 16 and 1000000") }
                socket.maxQueuedEvents = queued
            }
        }

        var ledgerMax: Double?
        if let ledger = try table.table("ledger") {
            try ledger.rejectUnknownKeys(["max_size_mb"])
            if let size = try ledger.double("max_size_mb") {
                guard size >= 0.05 else { throw ledger.error("max_size_mb", "must be at least 0.05") }
                ledgerMax = size
            }
        }

        var plugins = PluginSettings()
        if let settings = try table.table("plugins") {
            try settings.rejectUnknownKeys(["isolation", "budget_ms", "max_crashes", "crash_window_s", "start_timeout_s", "host", "sandbox", "memory_mb"])
            if let isolation = try settings.string("isolation") {
                guard let value = PluginSettings.DefaultIsolation(rawValue: isolation) else {
                    throw settings.error("isolation", "must be auto (shipped plugins in process, others isolated), in-process or process")
                }
                plugins.isolation = value
            }
            if let budget = try settings.double("budget_ms") { plugins.budgetNanoseconds = try Self.budget(budget, in: settings) }
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
            plugins.sandbox = try Self.sandbox(in: settings)
            plugins.memoryMiB = try Self.memory(in: settings) ?? plugins.memoryMiB
        }

        guard let links = try table.tables("chain"), !links.isEmpty else {
            throw table.error("chain", "is required: a list of links, e.g. - plugin: sanity")
        }
        let loader = PluginLoader(directory: pluginDirectory, runtimeDirectory: cacheDirectory)
        var chain: [Link] = []
        for link in links {
            try link.rejectUnknownKeys(["plugin", "name", "config", "isolation", "budget_ms", "user", "sandbox", "memory_mb", "readable"])
            guard let plugin = try link.string("plugin"), !plugin.isEmpty else { throw link.error("plugin", "is required") }
            let config = try link.table("config")
            do throws(PluginLoadError) {
                _ = try loader.path(forPlugin: plugin)
            } catch {
                throw link.error("plugin", "\(error)")
            }
            let name = try link.string("name") ?? plugin
            if let clash = chain.first(where: { $0.spec.name == name }) {
                throw link.error("name", "link name '\(name)' is used twice (also at line \(clash.line.map(String.init) ?? "?")); set a distinct 'name'")
            }
            var policy = LinkPolicy(isolation: plugins.isolation(forPlugin: plugin), budgetNanoseconds: plugins.budgetNanoseconds,
                                    sandbox: plugins.sandbox(forPlugin: plugin))
            if let isolation = try link.string("isolation") {
                guard let value = LinkPolicy.Isolation(rawValue: isolation) else { throw link.error("isolation", "must be in-process or process") }
                policy.isolation = value
            }
            if let budget = try link.double("budget_ms") { policy.budgetNanoseconds = try Self.budget(budget, in: link) }
            if let user = try link.string("user") {
                guard policy.isolation == .process else { throw link.error("user", "needs isolation: process (a link in process runs as the daemon)") }
                guard HostUser.named(user) != nil else { throw link.error("user", "no user '\(user)' on this system") }
                policy.user = user
            }
            for key in ["sandbox", "memory_mb", "readable"] where link.contains(key) && policy.isolation != .process {
                throw link.error(key, "needs isolation: process (a link in process shares the daemon's process)")
            }
            policy.sandbox.missing = try Self.sandbox(in: link) ?? policy.sandbox.missing
            policy.sandbox.memoryMiB = try Self.memory(in: link) ?? policy.sandbox.memoryMiB
            for path in try link.strings("readable") ?? [] {
                let resolved = path.replacingOccurrences(of: "${state_dir}", with: stateDirectory)
                guard resolved.hasPrefix("/") else { throw link.error("readable", "'\(path)' must be an absolute path (or start with ${state_dir})") }
                policy.sandbox.readable.append(resolved)
            }
            // Plugins get absolute paths: `${state_dir}` names the state directory (a calibration file there).
            let configJSON = config?.json(substituting: ["${state_dir}": stateDirectory]) ?? "{}"
            chain.append(Link(spec: LinkSpec(name: name, plugin: plugin, configJSON: configJSON, policy: policy),
                              line: link.line("plugin"), configLine: link.line("config"), nameLine: link.line("name")))
        }
        return DaemonConfiguration(
            file: table.file, logLevel: level, source: source, pluginDirectory: pluginDirectory, stateDirectory: stateDirectory,
            runtimeDirectory: runtimeDirectory, cacheDirectory: cacheDirectory, socket: socket, chain: chain, ledgerMaxSizeMiB: ledgerMax,
            plugins: plugins)
    }

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

    /// A chain build error as a settings error, pointing at the failing link's lines.
    public func settingsError(for error: ChainBuildError) -> SettingsError {
        let index = error.position - 1
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
