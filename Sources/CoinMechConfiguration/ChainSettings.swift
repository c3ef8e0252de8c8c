import CoinMechChain
import CoinMechPlugins
import CoinMechSettings
import Foundation

extension DaemonConfiguration.Link {
    /// Reads the `chain:` list: each link's plugin (found by `loader`), name, configuration,
    /// and how it runs (isolation, budget, user, sandbox), from the `plugins:` defaults.
    static func parse(_ table: SettingsTable, plugins: DaemonConfiguration.PluginSettings, loader: PluginLoader,
                      stateDirectory: String) throws(SettingsError) -> [Self] {
        guard let links = try table.tables("chain"), !links.isEmpty else {
            throw table.error("chain", "is required: a list of links, e.g. - plugin: sanity")
        }
        var chain: [Self] = []
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
            if let budget = try link.double("budget_ms") { policy.budgetNanoseconds = try DaemonConfiguration.budget(budget, in: link) }
            if let user = try link.string("user") {
                guard policy.isolation == .process else { throw link.error("user", "needs isolation: process (a link in process runs as the daemon)") }
                guard HostUser.named(user) != nil else { throw link.error("user", "no user '\(user)' on this system") }
                policy.user = user
            }
            for key in ["sandbox", "memory_mb", "readable"] where link.contains(key) && policy.isolation != .process {
                throw link.error(key, "needs isolation: process (a link in process shares the daemon's process)")
            }
            policy.sandbox.missing = try DaemonConfiguration.sandbox(in: link) ?? policy.sandbox.missing
            policy.sandbox.memoryMiB = try DaemonConfiguration.memory(in: link) ?? policy.sandbox.memoryMiB
            for path in try link.strings("readable") ?? [] {
                let resolved = path.replacingOccurrences(of: "${state_dir}", with: stateDirectory)
                guard resolved.hasPrefix("/") else { throw link.error("readable", "'\(path)' must be an absolute path (or start with ${state_dir})") }
                policy.sandbox.readable.append(resolved)
            }
            // Plugins get absolute paths: `${state_dir}` names the state directory (a calibration file there).
            let configJSON = config?.json(substituting: ["${state_dir}": stateDirectory]) ?? "{}"
            chain.append(Self(spec: LinkSpec(name: name, plugin: plugin, configJSON: configJSON, policy: policy),
                              line: link.line("plugin"), configLine: link.line("config"), nameLine: link.line("name")))
        }
        return chain
    }
}
