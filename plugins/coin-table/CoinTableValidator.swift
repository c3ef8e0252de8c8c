import CoinMechPluginABI
import CoinMechPluginKit

/// `coin-table`: a whole currency per instance, matched with each axis's noise in mind.
///
/// A reading's distance to a denomination is normalised per axis by that denomination's spread
/// on this mech (mint tolerance and sensor noise, or what teach mode measured). It is accepted
/// as the nearest denomination only when that one's window holds it, every other denomination
/// is farther by the margin and every foreign coin `foreign_odds` times less likely; a reading
/// within reach of two is rejected as `ambiguous`, naming both; a reading near none passes (and
/// ends `unrecognized`). The windows follow the mech's drift (`DriftFollower`), within `max_drift`.
///
/// A reading with the alloy axis (ABI 2.1) is scored against every composition of every coin on
/// the alloy too (`AlloyTable`); one without it is decided exactly as before (`MatchTable`).
final class CoinTableValidator: SwiftValidator {
    let candidates: CandidateList
    let alloyCandidates: AlloyCandidateList
    private let table: MatchTable
    private let alloyTable: AlloyTable
    private let drift: DriftFollower

    init(configJSON: String, host: PluginHost) throws(PluginConfigError) {
        let config = try CoinTableConfig.decode(configJSON)
        candidates = try CandidateList(config)
        alloyCandidates = try AlloyCandidateList(config, candidates)
        table = MatchTable(candidates)
        alloyTable = AlloyTable(candidates, alloyCandidates)
        drift = DriftFollower(enabled: candidates.followDrift, limit: candidates.maxDrift, host: host)
    }

    func validate(_ reading: ReadingView, _ decision: UnsafeMutablePointer<coinmech_decision>) {
        guard let f = figures(reading) else { return }
        // The table judges the reading with the mech's drift taken out; a coin it credits near
        // its centre teaches the drift.
        let factor = drift.factors
        let d = f.d * factor.diameter, w = f.w * factor.weight, t = f.t * factor.thickness
        var certain = false
        if alloyCandidates.enabled, let alloy = reading.alloy {
            let match = alloyMatch(d, w, t, f, alloy, certain: &certain)
            if certain, case .accept(let row) = match {
                let own = alloyTable.own(of: row)
                drift.update(judged: d, w, t, reciprocalCentre: table.reciprocalCentre(of: own), hasWeight: f.hasWeight, hasThickness: f.hasThickness)
                let alloyFactor = drift.alloyFactors
                drift.updateAlloy(judgedLow: alloy.lowIACS * alloyFactor.low, high: alloy.highIACS * alloyFactor.high,
                                  reciprocalCentre: alloyTable.reciprocalCentre(of: row))
            }
            alloyTable.write(match, to: decision)
            return
        }
        let match = table.match(d, w, t, hasWeight: f.hasWeight, hasThickness: f.hasThickness, certain: &certain)
        if certain, case .accept(let index) = match {
            drift.update(judged: d, w, t, reciprocalCentre: table.reciprocalCentre(of: index), hasWeight: f.hasWeight, hasThickness: f.hasThickness)
        }
        table.write(match, to: decision)
    }

    /// The alloy scan for figures with the drift taken out; a figure no metal gives is never matched.
    @inline(__always)
    private func alloyMatch(_ d: Double, _ w: Double, _ t: Double, _ f: (d: Double, w: Double, t: Double, hasWeight: Bool, hasThickness: Bool),
                            _ alloy: (lowIACS: Double, highIACS: Double, permeability: Double?), certain: inout Bool) -> AlloyTable.Match {
        if let field = AlloyTable.fault(low: alloy.lowIACS, high: alloy.highIACS, permeability: alloy.permeability) { return .badAlloy(field: field) }
        let alloyFactor = drift.alloyFactors
        return alloyTable.match(d, w, t, hasWeight: f.hasWeight, hasThickness: f.hasThickness, low: alloy.lowIACS * alloyFactor.low,
                                high: alloy.highIACS * alloyFactor.high, permeability: alloy.permeability, certain: &certain)
    }

    /// The figures the table judges, or nil when the reading is not for it: no diameter, no
    /// weight where one is required, or a figure that is not finite (which matches nothing).
    @inline(__always)
    private func figures(_ reading: ReadingView) -> (d: Double, w: Double, t: Double, hasWeight: Bool, hasThickness: Bool)? {
        guard let d = reading.diameterMM else { return nil }
        let weight = reading.weightG
        if weight == nil && candidates.requireWeight { return nil }
        let w = weight ?? 0, t = reading.thicknessMM ?? 0
        guard d.isFinite, w.isFinite, t.isFinite else { return nil }
        return (d, w, t, weight != nil, reading.thicknessMM != nil)
    }

    func explain(_ reading: ReadingView) -> String? {
        // The same arithmetic as `validate`, so the explanation's decision is the one it would take.
        let factor = drift.factors
        if alloyCandidates.enabled, let alloy = reading.alloy, let f = figures(reading) {
            var certain = false
            let match = alloyMatch(f.d * factor.diameter, f.w * factor.weight, f.t * factor.thickness, f, alloy, certain: &certain)
            return jsonText(AlloyExplanation(reading: reading, candidates: candidates, alloy: alloyCandidates, match: match,
                                             drift: drift.enabled ? drift.current : nil, alloyDrift: drift.enabled ? drift.currentAlloy : nil))
        }
        let match = figures(reading).map {
            table.match($0.d * factor.diameter, $0.w * factor.weight, $0.t * factor.thickness, hasWeight: $0.hasWeight, hasThickness: $0.hasThickness)
        }
        return jsonText(Explanation(reading: reading, candidates: candidates, match: match, drift: drift.enabled ? drift.current : nil))
    }

    func describe() -> String { jsonText(Description(candidates, alloy: alloyCandidates)) }
}

@_cdecl("coinmech_plugin_entry")
public func coinmechPluginEntry(_ hostABI: UInt32, _ plugin: UnsafeMutablePointer<coinmech_plugin>?) -> Int32 {
    PluginExport.fill(
        plugin, hostABI: hostABI, name: "coin-table", version: "2.2.0", license: "LicenseRef-CoinMech",
        description: "matches a reading against a whole currency with each axis's noise in mind, the alloy too where the mech measures it; returns a coin that could be two as ambiguous",
        kinds: COINMECH_KINDS_MEASURED | COINMECH_KINDS_ALLOY,
        create: { PluginExport.create(CoinTableValidator.self, $0, $1, $2, $3) },
        validate: { PluginExport.validate(CoinTableValidator.self, $0, $1, $2) },
        explain: { PluginExport.explain(CoinTableValidator.self, $0, $1, $2, $3) })
}
