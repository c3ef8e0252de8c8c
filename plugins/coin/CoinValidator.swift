import CoinMechPluginABI
import CoinMechPluginKit

/// `coin`: one denomination per instance. Accepts a reading inside its windows, passes anything else.
final class CoinValidator: SwiftValidator {
    struct Config: PluginConfiguration {
        var currency: String
        var code: String
        var value: Int64
        var diameter_mm: Double
        var weight_g: Double
        var thickness_mm: Double?
        /// Relative tolerance for every axis (0.05 = ±5 %), unless an axis sets its own.
        var tolerance: Double?
        var diameter_tolerance: Double?
        var weight_tolerance: Double?
        var thickness_tolerance: Double?

        static let keys: Set<String> = [
            "currency", "code", "value", "diameter_mm", "weight_g", "thickness_mm", "tolerance",
            "diameter_tolerance", "weight_tolerance", "thickness_tolerance",
        ]
    }

    let window: CoinWindow
    let accept: DecisionTemplate
    /// The currency it credits, which its description declares (a cabinet without
    /// `source.currencies` takes the currencies its links declare).
    let currency: String

    init(configJSON: String, host: PluginHost) throws(PluginConfigError) {
        let config = try Config.decode(configJSON)
        guard config.currency.utf8.count == 3 else { throw PluginConfigError("key 'currency' must be a 3-letter ISO 4217 code") }
        guard !config.code.isEmpty, config.code.utf8.count < 32 else { throw PluginConfigError("key 'code' must be 1 to 31 bytes") }
        guard config.value > 0 else { throw PluginConfigError("key 'value' must be a positive number of minor units") }
        let tolerance = config.tolerance ?? 0.05
        try require(tolerance, in: 0.001...0.5, key: "tolerance")
        window = try CoinWindow(
            diameter: config.diameter_mm, weight: config.weight_g, thickness: config.thickness_mm,
            diameterTolerance: config.diameter_tolerance ?? tolerance, weightTolerance: config.weight_tolerance ?? tolerance,
            thicknessTolerance: config.thickness_tolerance ?? tolerance)
        currency = config.currency.uppercased()
        accept = .accept(currency: currency, code: config.code, valueMinor: config.value)
    }

    func validate(_ reading: ReadingView, _ decision: UnsafeMutablePointer<coinmech_decision>) {
        if window.distance(reading) != nil { accept.write(to: decision) }
    }

    struct Description: Encodable {
        let currency: String
        let window: CoinWindow
    }

    func describe() -> String { jsonText(Description(currency: currency, window: window)) }
}

@_cdecl("coinmech_plugin_entry")
public func coinmechPluginEntry(_ hostABI: UInt32, _ plugin: UnsafeMutablePointer<coinmech_plugin>?) -> Int32 {
    PluginExport.fill(
        plugin, hostABI: hostABI, name: "coin", version: "2.0.0", license: "LicenseRef-CoinMech",
        description: "accepts one denomination inside its diameter, weight and thickness window; passes anything else",
        create: { PluginExport.create(CoinValidator.self, $0, $1, $2, $3) },
        validate: { PluginExport.validate(CoinValidator.self, $0, $1, $2) })
}
