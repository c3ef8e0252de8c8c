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
    /// Nearby candidates, nearest first.
    let candidates: [Scored]

    init(reading: ReadingView, candidates list: CandidateList, match: MatchTable.Match?) {
        window = list.window
        margin = list.margin
        let all = list.all
        guard let match, let d = reading.diameterMM else {
            let why = reading.diameterMM == nil ? "no diameter" : reading.weightG == nil ? "no weight (require_weight is true)" : "a figure is not a finite number"
            lines = ["pass: not judged (\(why))"]
            decision = "pass"
            code = nil
            other = nil
            candidates = []
            return
        }
        let w = reading.weightG, t = reading.thicknessMM
        // What the scan leaves out for this reading: foreign coins without a weight, some without a thickness.
        func applies(_ candidate: Candidate) -> Bool { candidate.own || (w != nil && (t != nil || !candidate.onlyWithThickness)) }
        let scored = all.map { candidate -> Scored in
            let z = candidate.spread.zScores(diameter: d, weight: w, thickness: t)
            let distance = candidate.spread.distance(diameter: d, weight: w, thickness: t)
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

        var lines = candidates.map { c in
            let axes = [("diameter", c.z["diameter"]), ("weight", c.z["weight"]), ("thickness", c.z["thickness"])]
                .compactMap { name, z in z.map { "\(name) \(String(format: "%+.1f", $0))σ" } }.joined(separator: ", ")
            let state = c.inside ? "inside " : "outside"
            return "\(c.name.padding(toLength: 14, withPad: " ", startingAt: 0)) \(String(format: "%5.1f", c.distance))σ  \(state)  (\(axes))  \(c.origin.rawValue)"
        }
        let nearest = byDistance.first
        switch match {
        case .accept(let index):
            let runnerUp = byDistance.first { $0.name != all[index].name }
            decision = "accept"
            code = all[index].spec.code
            other = nil
            lines.append("accept \(all[index].name): inside its \(sigmas(list.window)) window"
                + (runnerUp.map { "; the runner-up \($0.name) is \(sigmas($0.distance - scored[index].distance)) farther (margin \(sigmas(list.margin)))" } ?? ""))
        case .ambiguous(let own, let otherIndex):
            decision = "ambiguous"
            code = all[own].spec.code
            other = all[otherIndex].name
            let (near, far) = scored[own].distance <= scored[otherIndex].distance ? (own, otherIndex) : (otherIndex, own)
            lines.append("ambiguous: \(all[far].name) is only \(sigmas(scored[far].distance - scored[near].distance)) farther than "
                + "\(all[near].name), less than the margin of \(sigmas(list.margin)): returned")
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
    let sensor_noise: SensorNoise
    let calibration: String?
    /// Taught mean ÷ mint figure per axis (1 where nothing was taught).
    let bias: [String: Double]
    let denominations: [Window]
    let foreign: [Window]
    let warnings: [String]

    init(_ list: CandidateList) {
        currency = list.currency
        window = list.window
        margin = list.margin
        sensor_noise = list.noise
        calibration = list.calibrationSource
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
        warnings = list.warnings
    }
}
