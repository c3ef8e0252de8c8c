import CoinMechPluginABI
import CoinMechPluginKit

/// `sanity`: a guard that rejects readings no coin could produce (NaN, infinite, zero or
/// negative, or outside physical limits). Anything plausible passes to the next link.
final class SanityValidator: SwiftValidator {
    struct Config: PluginConfiguration {
        var min_diameter_mm: Double?
        var max_diameter_mm: Double?
        var min_weight_g: Double?
        var max_weight_g: Double?
        var max_thickness_mm: Double?
        static let keys: Set<String> = ["min_diameter_mm", "max_diameter_mm", "min_weight_g", "max_weight_g", "max_thickness_mm"]
    }

    struct Axis {
        let range: ClosedRange<Double>
        let notFinite: DecisionTemplate
        let nonPositive: DecisionTemplate
        let outOfRange: DecisionTemplate

        init(_ name: String, unit: String, range: ClosedRange<Double>) {
            self.range = range
            notFinite = .reject(reason: "not_finite", message: "\(name) is not a finite number")
            nonPositive = .reject(reason: "non_positive", message: "\(name) is zero or negative")
            outOfRange = .reject(
                reason: "out_of_range", message: "\(name) outside \(range.lowerBound)–\(range.upperBound) \(unit)")
        }

        /// Whether `value` is plausible; if not, writes the rejection and returns false.
        @inline(__always)
        func admits(_ value: Double, _ decision: UnsafeMutablePointer<coinmech_decision>) -> Bool {
            if range.contains(value) { return true }  // the common case: one test (NaN fails it)
            (!value.isFinite ? notFinite : value <= 0 ? nonPositive : outOfRange).write(to: decision)
            return false
        }
    }

    let diameter: Axis
    let weight: Axis
    let thickness: Axis
    let empty = DecisionTemplate.reject(reason: "empty_reading", message: "reading carries no measurement")

    init(configJSON: String, host: PluginHost) throws(PluginConfigError) {
        let config = try Config.decode(configJSON)
        let minDiameter = config.min_diameter_mm ?? 5, maxDiameter = config.max_diameter_mm ?? 50
        let minWeight = config.min_weight_g ?? 0.1, maxWeight = config.max_weight_g ?? 50
        let maxThickness = config.max_thickness_mm ?? 10
        guard minDiameter > 0, minDiameter < maxDiameter, minWeight > 0, minWeight < maxWeight, maxThickness > 0 else {
            throw PluginConfigError("limits must be positive with each min below its max")
        }
        diameter = Axis("diameter", unit: "mm", range: minDiameter...maxDiameter)
        weight = Axis("weight", unit: "g", range: minWeight...maxWeight)
        thickness = Axis("thickness", unit: "mm", range: Double.leastNonzeroMagnitude...maxThickness)
    }

    func validate(_ reading: ReadingView, _ decision: UnsafeMutablePointer<coinmech_decision>) {
        if reading.raw.pointee.flags == 0 { return empty.write(to: decision) }
        if let d = reading.diameterMM, !diameter.admits(d, decision) { return }
        if let w = reading.weightG, !weight.admits(w, decision) { return }
        if let t = reading.thicknessMM, !thickness.admits(t, decision) { return }
    }

    func describe() -> String {
        jsonText([
            "diameter_mm": [diameter.range.lowerBound, diameter.range.upperBound],
            "weight_g": [weight.range.lowerBound, weight.range.upperBound],
            "thickness_mm": [0, thickness.range.upperBound],
        ])
    }
}

@_cdecl("coinmech_plugin_entry")
public func coinmechPluginEntry(_ hostABI: UInt32, _ plugin: UnsafeMutablePointer<coinmech_plugin>?) -> Int32 {
    PluginExport.fill(
        plugin, hostABI: hostABI, name: "sanity", version: "2.0.0", license: "LicenseRef-CoinMech",
        description: "rejects readings no coin could produce: not finite, zero or negative, or outside physical limits",
        create: { PluginExport.create(SanityValidator.self, $0, $1, $2, $3) },
        validate: { PluginExport.validate(SanityValidator.self, $0, $1, $2) })
}
