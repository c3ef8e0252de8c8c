import CoinFacts
import CoinMechPluginABI
import CoinMechPluginKit

/// `coin-table`: a whole currency per instance, from the built-in mint tables.
///
/// A reading inside several windows goes to the nearest nominal (normalised distance), not
/// to the first row; windows that overlap are reported as warnings when the instance is made.
final class CoinTableValidator: SwiftValidator {
    struct Tolerance: Decodable {
        var diameter: Double?
        var weight: Double?
        var thickness: Double?
    }

    struct Config: PluginConfiguration {
        /// "USD", "EUR" or "GBP".
        var currency: String
        /// Relative tolerance of every axis of every denomination (default 0.05 = ±5 %).
        var tolerance: Double?
        /// Per-denomination tolerances by code, e.g. {"EUR_50c": {"diameter": 0.02}}.
        var tolerances: [String: Tolerance]?
        /// Only these codes (default: the whole table).
        var denominations: [String]?

        static let keys: Set<String> = ["currency", "tolerance", "tolerances", "denominations"]
    }

    struct Entry: Encodable {
        let code: String
        let window: CoinWindow
    }

    let entries: [Entry]
    let accepts: [DecisionTemplate]
    let warnings: [String]

    init(configJSON: String) throws(PluginConfigError) {
        let config = try Config.decode(configJSON)
        guard let table = CoinTables.table(for: config.currency) else {
            throw PluginConfigError("key 'currency': no built-in table for '\(config.currency)' (known: USD, EUR, GBP)")
        }
        let codes = Set(table.map(\.code))
        for code in (config.denominations ?? []) + (config.tolerances.map { Array($0.keys) } ?? []) where !codes.contains(code) {
            throw PluginConfigError("unknown denomination '\(code)' for \(config.currency) (known: \(table.map(\.code).joined(separator: ", ")))")
        }
        let tolerance = config.tolerance ?? 0.05
        try require(tolerance, in: 0.001...0.5, key: "tolerance")
        let wanted = config.denominations.map(Set.init) ?? codes
        var entries: [Entry] = []
        for spec in table where wanted.contains(spec.code) {
            let own = config.tolerances?[spec.code]
            entries.append(Entry(code: spec.code, window: try CoinWindow(
                diameter: spec.diameterMM, weight: spec.weightG, thickness: spec.thicknessMM,
                diameterTolerance: own?.diameter ?? tolerance, weightTolerance: own?.weight ?? tolerance,
                thicknessTolerance: own?.thickness ?? tolerance)))
        }
        self.entries = entries
        accepts = table.filter { wanted.contains($0.code) }.map {
            .accept(currency: $0.currency, code: $0.code, valueMinor: $0.valueMinor)
        }
        var warnings: [String] = []
        for (i, a) in entries.enumerated() {
            for b in entries[(i + 1)...] where a.window.overlaps(b.window) {
                warnings.append("windows of \(a.code) and \(b.code) overlap; readings in both go to the nearest nominal")
            }
        }
        self.warnings = warnings
    }

    func validate(_ reading: ReadingView, _ decision: UnsafeMutablePointer<coinmech_decision>) {
        guard let d = reading.diameterMM, let w = reading.weightG else { return }
        let t = reading.thicknessMM
        var best = -1
        var bestDistance = Double.infinity
        entries.withUnsafeBufferPointer { entries in
            for index in entries.indices {
                if let distance = entries[index].window.distance(diameter: d, weight: w, thickness: t), distance < bestDistance {
                    best = index
                    bestDistance = distance
                }
            }
        }
        if best >= 0 { accepts[best].write(to: decision) }
    }

    func describe() -> String {
        struct Description: Encodable {
            let denominations: [Entry]
            let warnings: [String]
        }
        return jsonText(Description(denominations: entries, warnings: warnings))
    }
}

@_cdecl("coinmech_plugin_entry")
public func coinmechPluginEntry(_ hostABI: UInt32, _ plugin: UnsafeMutablePointer<coinmech_plugin>?) -> Int32 {
    PluginExport.fill(plugin, hostABI: hostABI, name: "coin-table", version: "1.0.0") { json, error, size in
        PluginExport.create(CoinTableValidator.self, json, error, size)
    }
}
