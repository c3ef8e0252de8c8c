import CoinMechCalibration
import CoinMechPluginKit
import Foundation

/// What `explain` returns for a reading with the alloy axis: the distance to each nearby
/// composition on the geometry and on the alloy, and the decision, as lines and as data.
struct AlloyExplanation: Encodable {
    struct Scored: Encodable {
        let name: String
        let composition: String
        let origin: Candidate.Origin
        /// Geometry and alloy distances, in σ, and the two together.
        let geometry: Double
        let alloy: Double
        let distance: Double
        let inside: Bool
        /// Signed distance per alloy axis, in σ.
        let z: [String: Double]
    }

    let lines: [String]
    /// "accept", "ambiguous", "wrong_alloy", "bad_alloy" or "pass".
    let decision: String
    let code: String?
    let other: String?
    let window: Double
    let alloy_window: Double
    let drift: [String: Double]?
    let candidates: [Scored]

    init(reading: ReadingView, candidates list: CandidateList, alloy: AlloyCandidateList, match: AlloyTable.Match,
         drift now: (diameter: Double, weight: Double, thickness: Double, coins: Int)?, alloyDrift: (low: Double, high: Double, coins: Int)?) {
        window = list.window
        alloy_window = alloy.window
        var driftFigures: [String: Double]?
        if let now {
            driftFigures = ["diameter": now.diameter - 1, "weight": now.weight - 1, "thickness": now.thickness - 1, "coins": Double(now.coins)]
            if let alloyDrift {
                driftFigures?["conductivity_low"] = alloyDrift.low - 1
                driftFigures?["conductivity_high"] = alloyDrift.high - 1
            }
        }
        drift = driftFigures
        let factor = now ?? (1, 1, 1, 0)
        let alloyFactor = alloyDrift ?? (1, 1, 0)
        let d = (reading.diameterMM ?? 0) / factor.diameter, w = reading.weightG.map { $0 / factor.weight }
        let t = reading.thicknessMM.map { $0 / factor.thickness }
        let figures = reading.alloy!
        let low = figures.lowIACS / alloyFactor.low, high = figures.highIACS / alloyFactor.high
        let all = alloy.all
        let scored = all.map { row -> Scored in
            let plain = row.candidate.spread.distance(diameter: d, weight: w, thickness: t)
            let unknown = t != nil && row.candidate.spread.thickness == nil ? 1.0 : 0
            let geometry = (plain * plain + unknown).squareRoot()
            let a = row.alloy
            let zl = (low - (t == nil ? a.lowUnmeasured : a.low.mean)) / a.low.sigma
            let zh = (high - (t == nil ? a.highUnmeasured : a.high.mean)) / a.high.sigma
            var z = ["conductivity_low": zl, "conductivity_high": zh]
            var a2 = zl * zl + zh * zh
            if let permeability = figures.permeability {
                let zm = (log(permeability) - a.logPermeability.mean) / a.logPermeability.sigma
                z["permeability"] = zm
                a2 += zm * zm
            }
            return Scored(name: row.name, composition: a.name, origin: row.candidate.origin, geometry: geometry, alloy: a2.squareRoot(),
                          distance: (geometry * geometry + a2).squareRoot(), inside: geometry <= list.window && a2.squareRoot() <= alloy.window, z: z)
        }
        let byDistance = scored.sorted { $0.distance < $1.distance }
        candidates = Array(byDistance.prefix(4))
        var lines: [String] = []
        if let alloyDrift, now != nil {
            lines.append(String(format: "following the alloy's drift from %d coins: low %+.1f %%, high %+.1f %%", alloyDrift.coins,
                                (alloyDrift.low - 1) * 100, (alloyDrift.high - 1) * 100))
        }
        lines.append(String(format: "alloy: %.3f / %.3f %% IACS", figures.lowIACS, figures.highIACS)
            + (figures.permeability.map { String(format: ", permeability %.3f", $0) } ?? ""))
        lines += candidates.map { c in
            let axes = ["conductivity_low", "conductivity_high", "permeability"].compactMap { key in c.z[key].map { "\(key) " + String(format: "%+.1fσ", $0) } }
                .joined(separator: ", ")
            return "\(c.name) (\(c.composition)) geometry " + String(format: "%.1fσ, alloy %.1fσ", c.geometry, c.alloy)
                + ": \(c.inside ? "inside" : "outside") (\(axes))  \(c.origin.rawValue)"
        }
        switch match {
        case .accept(let row):
            decision = "accept"
            code = all[row].candidate.spec.code
            other = nil
            lines.append("accept \(all[row].name) (\(all[row].alloy.name)): inside its windows, the geometry's and the alloy's")
        case .ambiguous(let row, let otherRow):
            decision = "ambiguous"
            code = all[row].candidate.spec.code
            other = all[otherRow].name
            lines.append("ambiguous: \(all[row].name) or \(all[otherRow].name) (\(all[otherRow].alloy.name)): too close to both to tell, returned")
        case .wrongAlloy(let own):
            decision = "wrong_alloy"
            code = list.own[own].spec.code
            other = nil
            lines.append("wrong_alloy: the size and weight of \(list.own[own].name), and none of its compositions' metal: returned")
        case .badAlloy(let field):
            decision = "bad_alloy"
            code = nil
            other = nil
            lines.append("\(AlloyTable.badFields[field].reason): \(AlloyTable.badFields[field].field) is not a measurement: returned")
        case .none:
            decision = "pass"
            code = nil
            other = nil
            if let nearest = byDistance.first, nearest.inside {
                lines.append("pass: nearest is \(nearest.name) (\(nearest.composition)), a foreign coin this link never credits")
            } else {
                lines.append("pass: no window holds the reading" + (byDistance.first.map { " (nearest \($0.name) at \(sigmas($0.distance)))" } ?? ""))
            }
        }
        self.lines = lines
    }
}
