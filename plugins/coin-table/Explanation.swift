import CoinMechCalibration
import CoinMechPluginKit
import Foundation

/// What `explain` returns for a reading: the normalised distance to each nearby candidate and the
/// decision, as lines for people and as data.
struct Explanation: Encodable {
    struct Scored: Encodable {
        let name: String
        let currency: String
        let code: String
        let origin: Candidate.Origin
        /// Normalised distance, in σ.
        let distance: Double
        /// Whether its window (and any hard limit) holds the reading.
        let inside: Bool
        /// Signed distance per axis, in σ; absent for an axis not measured or not known.
        let z: [String: Double]
    }

    let lines: [String]
    /// "accept", "ambiguous" or "pass".
    let decision: String
    /// The accepted or the nearer ambiguous denomination, and the other ambiguous candidate.
    let code: String?
    let other: String?
    let window: Double
    let margin: Double
    let foreign_odds: Double
    /// The drift the windows follow (relative per axis, 0 = none) and from how many coins; absent when not followed.
    let drift: [String: Double]?
    /// Nearby candidates, nearest first.
    let candidates: [Scored]

    init(reading: ReadingView, candidates list: CandidateList, match: MatchTable.Match?,
         drift now: (diameter: Double, weight: Double, thickness: Double, coins: Int)?) {
        window = list.window
        margin = list.margin
        foreign_odds = list.foreignOdds
        drift = now.map { ["diameter": $0.diameter - 1, "weight": $0.weight - 1, "thickness": $0.thickness - 1, "coins": Double($0.coins)] }
        let all = list.all
        guard let match, let raw = reading.diameterMM else {
            let why = reading.diameterMM == nil ? "no diameter" : reading.weightG == nil ? "no weight (require_weight is true)" : "a figure is not a finite number"
            lines = ["pass: not judged (\(why))"]
            decision = "pass"
            code = nil
            other = nil
            candidates = []
            return
        }
        // The windows are judged against the reading with the mech's drift taken out.
        let factor = now ?? (1, 1, 1, 0)
        let d = raw / factor.diameter, w = reading.weightG.map { $0 / factor.weight }, t = reading.thicknessMM.map { $0 / factor.thickness }
        // What the scan leaves out for this reading: foreign coins without a weight, some without a thickness.
        func applies(_ candidate: Candidate) -> Bool { candidate.own || (w != nil && (t != nil || !candidate.onlyWithThickness)) }
        let scored = all.map { candidate -> Scored in
            let z = candidate.spread.zScores(diameter: d, weight: w, thickness: t)
            // As the table scores it: a measured thickness counts 1σ² against a coin with none recorded.
            let unknown = t != nil && candidate.spread.thickness == nil ? 1.0 : 0
            let plain = candidate.spread.distance(diameter: d, weight: w, thickness: t)
            let distance = (plain * plain + unknown).squareRoot()
            func withinLimit(_ relative: Double?, _ value: Double?, _ centre: Double?) -> Bool {
                guard let relative, let value, let centre else { return true }
                return abs(value - centre) <= relative * centre
            }
            let s = candidate.spread
            let inside = distance <= list.window && withinLimit(candidate.limit.diameter, d, s.diameter.mean)
                && withinLimit(candidate.limit.weight, w, s.weight.mean) && withinLimit(candidate.limit.thickness, t, s.thickness?.mean)
            var axes = ["diameter": z.diameter]
            axes["weight"] = z.weight
            axes["thickness"] = z.thickness
            return Scored(name: candidate.name, currency: candidate.spec.currency, code: candidate.spec.code, origin: candidate.origin,
                          distance: distance, inside: inside, z: axes)
        }
        let byDistance = zip(all, scored).filter { applies($0.0) }.map(\.1).sorted { $0.distance < $1.distance }
        // Nearby: the three nearest, and any other within reach of the window and margin.
        candidates = byDistance.enumerated().filter { $0.offset < 3 || $0.element.distance <= list.window + list.margin }.map(\.element)

        var lines: [String] = []
        if let now {
            func percent(_ value: Double) -> String {
                let tenths = ((value - 1) * 1000).rounded()
                return String(format: "%+.1f %%", tenths == 0 ? 0 : tenths / 10)  // never "-0.0"
            }
            lines.append("following the mech's drift from \(now.coins) coins: diameter \(percent(now.diameter)), weight \(percent(now.weight)), "
                + "thickness \(percent(now.thickness)); the distances are of the reading with it taken out")
        }
        lines += candidates.map { c in
            let axes = [("diameter", c.z["diameter"]), ("weight", c.z["weight"]), ("thickness", c.z["thickness"])]
                .compactMap { name, z in z.map { "\(name) \(String(format: "%+.1f", $0))σ" } }.joined(separator: ", ")
            let state = c.inside ? "inside " : "outside"
            return "\(c.name.padding(toLength: 14, withPad: " ", startingAt: 0)) \(String(format: "%5.1f", c.distance))σ  \(state)  (\(axes))  \(c.origin.rawValue)"
        }
        let nearest = byDistance.first
        switch match {
        case .accept(let index):
            decision = "accept"
            code = all[index].spec.code
            other = nil
            let runnerUpOwn = byDistance.first { $0.name != all[index].name && $0.origin != .foreign }
            let nearestForeign = byDistance.first { $0.origin == .foreign }
            var line = "accept \(all[index].name): inside its \(sigmas(list.window)) window"
            if let r = runnerUpOwn {
                line += "; the next denomination, \(r.name), is \(sigmas(r.distance - scored[index].distance)) farther (margin \(sigmas(list.margin)))"
            }
            if let f = nearestForeign {
                line += "; the nearest foreign coin, \(f.name), is \(times(odds(scored[index], f))) less likely (at least \(times(list.foreignOdds)))"
            }
            lines.append(line)
        case .ambiguous(let own, let otherIndex):
            decision = "ambiguous"
            code = all[own].spec.code
            other = all[otherIndex].name
            let (near, far) = scored[own].distance <= scored[otherIndex].distance ? (own, otherIndex) : (otherIndex, own)
            if all[own].origin == .foreign || all[otherIndex].origin == .foreign {
                lines.append("ambiguous: \(all[far].name) is only \(times(odds(scored[near], scored[far]))) less likely than "
                    + "\(all[near].name), less than the foreign odds of \(times(list.foreignOdds)): returned")
            } else {
                lines.append("ambiguous: \(all[far].name) is only \(sigmas(scored[far].distance - scored[near].distance)) farther than "
                    + "\(all[near].name), less than the margin of \(sigmas(list.margin)): returned")
            }
        case .none:
            decision = "pass"
            code = nil
            other = nil
            if let nearest, nearest.inside {
                lines.append("pass: nearest is \(nearest.name), a foreign coin this link never credits")
            } else {
                lines.append("pass: no window holds the reading" + (nearest.map { " (nearest \($0.name) at \(sigmas($0.distance)))" } ?? ""))
            }
        }
        self.lines = lines
    }
}

/// How many times likelier a reading is of `near` than of `far`: exp((far² − near²) / 2).
private func odds(_ near: Explanation.Scored, _ far: Explanation.Scored) -> Double {
    exp((far.distance * far.distance - near.distance * near.distance) / 2)
}

/// "300×", "4.2×", "> 10⁶×".
private func times(_ value: Double) -> String {
    value >= 1e6 ? "over 10⁶ times" : value >= 100 ? String(format: "%.0f times", value) : String(format: "%.1f times", value)
}

/// What `describe` returns: the windows in force, the foreign coins watched, and warnings.
struct Description: Encodable {
    struct Window: Encodable {
        let name: String
        let origin: Candidate.Origin
        let diameter: CoinSpread.Axis
        let weight: CoinSpread.Axis
        let thickness: CoinSpread.Axis?
        /// Hard limits (relative), where configured.
        let limit: [String: Double]?
        /// A foreign coin scored only on readings with a thickness.
        let only_with_thickness: Bool?
    }

    let currency: String
    let window: Double
    let margin: Double
    let foreign_odds: Double
    let sensor_noise: SensorNoise
    let calibration: String?
    /// Whether the windows follow the mech's drift, and the most they follow (relative).
    let follow_drift: Bool
    let max_drift: Double
    /// Taught mean ÷ mint figure per axis (1 where nothing was taught).
    let bias: [String: Double]
    let denominations: [Window]
    let foreign: [Window]
    /// The alloy axis: the frequencies, window and noise, and each own composition's window.
    let alloy: AlloyDescription
    let warnings: [String]

    struct AlloyWindowDescription: Encodable {
        let name: String
        let composition: String
        let origin: Candidate.Origin
        let conductivity_low: CoinSpread.Axis
        let conductivity_high: CoinSpread.Axis
        let log_permeability: CoinSpread.Axis
    }

    struct AlloyDescription: Encodable {
        let enabled: Bool
        let frequencies_hz: [Double]
        let temperature_c: [Double]
        let window: Double
        let noise: Double
        let bias: [String: Double]
        let denominations: [AlloyWindowDescription]
        let foreign_compositions: Int
    }

    init(_ list: CandidateList, alloy: AlloyCandidateList) {
        currency = list.currency
        window = list.window
        margin = list.margin
        foreign_odds = list.foreignOdds
        sensor_noise = list.noise
        calibration = list.calibrationSource
        follow_drift = list.followDrift
        max_drift = list.maxDrift
        bias = ["diameter": list.bias.diameter, "weight": list.bias.weight, "thickness": list.bias.thickness]
        func describe(_ c: Candidate) -> Window {
            var limit: [String: Double] = [:]
            limit["diameter"] = c.limit.diameter
            limit["weight"] = c.limit.weight
            limit["thickness"] = c.spread.thickness == nil ? nil : c.limit.thickness
            return Window(name: c.name, origin: c.origin, diameter: c.spread.diameter, weight: c.spread.weight, thickness: c.spread.thickness,
                          limit: limit.isEmpty ? nil : limit, only_with_thickness: c.onlyWithThickness ? true : nil)
        }
        denominations = list.own.map(describe)
        foreign = list.foreign.map(describe)
        self.alloy = AlloyDescription(
            enabled: alloy.enabled, frequencies_hz: [alloy.sensor.lowHz, alloy.sensor.highHz],
            temperature_c: [alloy.temperatures.lowerBound, alloy.temperatures.upperBound], window: alloy.window, noise: alloy.noise,
            bias: ["conductivity_low": alloy.bias.low, "conductivity_high": alloy.bias.high],
            denominations: alloy.own.map {
                AlloyWindowDescription(name: $0.name, composition: $0.alloy.name, origin: $0.alloy.origin, conductivity_low: $0.alloy.low,
                                       conductivity_high: $0.alloy.high, log_permeability: $0.alloy.logPermeability)
            },
            foreign_compositions: alloy.foreign.count)
        warnings = list.warnings + alloy.warnings
    }
}
