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
        /// False for mechs that measure no weight (light gates alone): readings without a weight
        /// are then judged on diameter (and thickness, if measured). Default true.
        var require_weight: Bool?

        static let keys: Set<String> = ["currency", "tolerance", "tolerances", "denominations", "require_weight"]
    }

    struct Entry: Encodable {
        let code: String
        let window: CoinWindow
    }

    let entries: [Entry]
    let warnings: [String]
    let requireWeight: Bool
    /// The windows and verdicts again, in scan order, in buffers the instance owns, so
    /// `validate` touches no reference counts.
    private let rows: UnsafeMutableBufferPointer<Row>

    /// A window as `validate` scans it: nominal figures and reciprocal half-widths, flat.
    struct Row {
        let diameter, diameterScale, weight, weightScale: Double
        /// Nominal thickness and its scale; the scale is 0 when the table gives no thickness,
        /// so a measured thickness does not count there.
        let thickness, thicknessScale: Double

        init(_ window: CoinWindow) {
            diameter = window.diameter
            diameterScale = window.diameterScale
            weight = window.weight
            weightScale = window.weightScale
            thickness = window.thickness ?? 0
            thicknessScale = window.thickness == nil ? 0 : window.thicknessScale
        }
    }
    private let accepts: UnsafeMutableBufferPointer<DecisionTemplate>

    /// Low bits of a score that hold the row index (the distance keeps 44 of its 52 mantissa bits).
    private static let indexMask: UInt64 = 0xFF
    private static let maxRows = Int(indexMask)

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
        // Scan order: by lower diameter bound (ties between equal distances go to the smaller coin).
        let scan = entries.indices.sorted { entries[$0].window.bounds.diameter.lowerBound < entries[$1].window.bounds.diameter.lowerBound }
        let specs = table.filter { wanted.contains($0.code) }
        precondition(entries.count <= Self.maxRows, "a coin table has at most \(Self.maxRows) rows")
        rows = .allocate(capacity: entries.count)
        _ = rows.initialize(from: scan.map { Row(entries[$0].window) })
        accepts = .allocate(capacity: entries.count)
        _ = accepts.initialize(from: scan.map { specs[$0] }.map {
            .accept(currency: $0.currency, code: $0.code, valueMinor: $0.valueMinor)
        })
        var warnings: [String] = []
        for (i, a) in entries.enumerated() {
            for b in entries[(i + 1)...] where a.window.overlaps(b.window) {
                warnings.append("windows of \(a.code) and \(b.code) overlap; readings in both go to the nearest nominal")
            }
        }
        self.warnings = warnings
        requireWeight = config.require_weight ?? true
    }

    func validate(_ reading: ReadingView, _ decision: UnsafeMutablePointer<coinmech_decision>) {
        guard let d = reading.diameterMM else { return }
        guard let w = reading.weightG else {
            if !requireWeight { validateDiameterOnly(d, reading.thicknessMM, decision) }
            return
        }
        let t = reading.thicknessMM ?? 0
        // Thickness counts only when measured (and, by its row's scale, only where the table has it).
        let thicknessWeight: Double = reading.thicknessMM == nil ? 0 : 1
        // NaN and infinite figures match no window; settling them here keeps NaN out of the scan.
        guard d.isFinite, w.isFinite, t.isFinite else { return }
        // Every row is scored and none is skipped by a branch: which window a noisy reading
        // falls in is random, and a mispredicted branch costs more than scoring a row. Each
        // score is the squared distance's bit pattern (ordered like the distance, as it is
        // never negative) with the row index in its low bits, so one integer minimum finds
        // the nearest row, the lower index on a tie; rows that do not hold the reading score
        // the maximum.
        var nearest = UInt64.max
        for index in 0..<rows.count {
            let row = rows[index]
            let dd = (d - row.diameter) * row.diameterScale
            let dw = (w - row.weight) * row.weightScale
            let dt = (t - row.thickness) * (row.thicknessScale * thicknessWeight)
            let d2 = dd * dd, w2 = dw * dw, t2 = dt * dt
            let score = (d2 + w2 + t2).bitPattern & ~Self.indexMask | UInt64(index)
            nearest = Swift.min(nearest, Swift.max(d2, w2, t2) <= 1 ? score : .max)
        }
        if nearest != .max { DecisionTemplate.write(accepts.baseAddress! + Int(nearest & Self.indexMask), to: decision) }
    }

    /// Nearest nominal diameter among the windows the diameter (and thickness) fall in.
    private func validateDiameterOnly(_ d: Double, _ t: Double?, _ decision: UnsafeMutablePointer<coinmech_decision>) {
        var best = -1
        var bestDistance = Double.infinity
        for index in 0..<rows.count {
            let row = rows[index]
            let dd = (d - row.diameter) * row.diameterScale
            guard dd * dd <= 1 else { continue }
            var distance = dd * dd
            if let t, row.thicknessScale != 0 {
                let dt = (t - row.thickness) * row.thicknessScale
                guard dt * dt <= 1 else { continue }
                distance += dt * dt
            }
            if distance < bestDistance {
                best = index
                bestDistance = distance
            }
        }
        if best >= 0 { DecisionTemplate.write(accepts.baseAddress! + best, to: decision) }
    }

    deinit {
        rows.deallocate()
        accepts.deallocate()
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
    PluginExport.fill(
        plugin, hostABI: hostABI, name: "coin-table", version: "1.0.0",
        create: { PluginExport.create(CoinTableValidator.self, $0, $1, $2) },
        validate: { PluginExport.validate(CoinTableValidator.self, $0, $1, $2) })
}
