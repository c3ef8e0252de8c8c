// A complete CoinMech validator plugin in Swift: rejects coins heavier than a configured limit.
// Built by the package as the `example-minimal-swift` dynamic library.
import CoinMechPluginABI
import CoinMechPluginKit

final class HeavyGuard: SwiftValidator {
    struct Config: PluginConfiguration {
        var max_weight_g: Double
        static let keys: Set<String> = ["max_weight_g"]
    }

    let limit: Double
    let tooHeavy = DecisionTemplate.reject(reason: "too_heavy", message: "heavier than any accepted coin")

    init(configJSON: String, host: PluginHost) throws(PluginConfigError) {
        limit = try Config.decode(configJSON).max_weight_g
    }

    func validate(_ reading: ReadingView, _ decision: UnsafeMutablePointer<coinmech_decision>) {
        if let weight = reading.weightG, weight > limit { tooHeavy.write(to: decision) }
    }
}

@_cdecl("coinmech_plugin_entry")
public func coinmechPluginEntry(_ hostABI: UInt32, _ plugin: UnsafeMutablePointer<coinmech_plugin>?) -> Int32 {
    PluginExport.fill(
        plugin, hostABI: hostABI, name: "heavy-guard", version: "1.0.0", license: "MIT-0",
        description: "rejects coins heavier than a configured limit (the Swift example of docs/PLUGINS.md)",
        create: { PluginExport.create(HeavyGuard.self, $0, $1, $2, $3) },
        validate: { PluginExport.validate(HeavyGuard.self, $0, $1, $2) })
}
