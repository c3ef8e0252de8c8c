import CoinFacts
import CoinMechCore
import CoinMechModel
import CoinMechCalibration
import CoinMechProtocol
import CoinMechSources
import Foundation

/// What a teach session's samples say: per axis the count, mean and σ, the window coin-table
/// would match with, its separation from every neighbouring window, readings left out as another
/// coin's, and what stands in the way of a commit. `teach status` shows it; a commit writes its
/// `calibration()`.
package struct TeachReport: Sendable {
    /// One axis of the kept samples.
    package struct Axis: Sendable {
        let name: String
        let unit: String
        let values: [Double]
        let mean: Double
        let sigma: Double
        /// The window coin-table would match with, on this axis: mean ± window × (σ widened by its standard error).
        let low: Double
        let high: Double
        /// The mint's figure, and the σ the mint's tolerance and the mech's noise predict.
        let mint: Double?
        let expectedSigma: Double?
    }

    /// A reading set aside: far from the others on some axis, most likely another coin.
    package struct LeftOut: Sendable {
        let sample: TeachSession.Sample
        let why: String
    }

    /// Another window of the link (or a foreign coin it watches) and how far the taught one is from it.
    package struct Neighbour: Sendable {
        let name: String
        let origin: String
        let spread: CoinSpread
        /// Its centre in the taught window's σ, and the taught centre in its σ (diameter and weight:
        /// a reading may lack thickness).
        let apart: Double
        let back: Double
        /// Both windows hold a stretch of the line between the centres (coin-table's load warning).
        let overlap: Bool
    }

    package let session: TeachSession
    package let table: CoinTableDescription?
    package let minimumSamples: Int
    package let kept: [TeachSession.Sample]
    package let leftOut: [LeftOut]
    /// Mean and σ of the kept samples (nil below two), and the window coin-table would use.
    package let coin: CoinCalibration.TaughtCoin?
    package let axes: [Axis]
    package let neighbours: [Neighbour]
    /// Things the operator should look at.
    package let warnings: [String]
    /// Things that stop a commit.
    package let problems: [String]

    /// Readings farther than this from the others (robust σ over every axis) are left out: a 50c
    /// among €1 sample coins lies about 7σ off; a genuine coin this far once in 65,000 readings
    /// (once in 900 when a few dozen coins' median deviation makes σ a fifth too small).
    package static let outlierLimit = 5.0
    /// A spread more than this many times the predicted one is worth a look.
    package static let spreadWarning = 2.0
    /// A taught mean this far from the mint's figure is refused, as coin-table refuses it.
    package static let meanLimit = 0.15

    package init(session: TeachSession, table: CoinTableDescription?, minimumSamples: Int) {
        self.session = session
        self.table = table
        self.minimumSamples = minimumSamples
        let request = session.request
        let windowSigmas = table?.window ?? 4
        var warnings: [String] = []
        var problems: [String] = []

        let outliers = Self.outliers(session.samples)
        if outliers.count > session.samples.count / 10 {
            // Too many to be strays: the samples are mixed, and leaving some out would hide it.
            kept = session.samples
            leftOut = []
            if !outliers.isEmpty {
                warnings.append("\(outliers.count) of \(session.samples.count) readings lie far from the others: mixed coins? See the histogram; abort and teach again")
            }
        } else {
            kept = session.samples.enumerated().filter { outliers[$0.offset] == nil }.map(\.element)
            leftOut = outliers.keys.sorted().map { LeftOut(sample: session.samples[$0], why: outliers[$0]!) }
            for out in leftOut {
                warnings.append("left out device seq \(out.sample.deviceSeq): \(out.why): another coin?")
            }
        }
        var measured = CoinCalibration.TaughtCoin.measure(kept.map { ($0.diameterMM, $0.weightG, $0.thicknessMM) })
        measured?.alloy = Self.alloy(kept)
        coin = measured

        let spec = CoinTables.table(for: request.currency)?.first { $0.code == request.code }
        let noise = table?.sensor_noise ?? .typical
        let expected = spec.map { spec in
            CoinSpread.nominal(diameter: spec.diameterMM, weight: spec.weightG, thickness: spec.thicknessMM,
                               mintSigma: MintTolerance.standardDeviation(of: spec), sensorNoise: noise)
        }
        var axes: [Axis] = []
        if let coin {
            let window = coin.matchingSpread
            let rows: [(String, String, KeyPath<TeachSession.Sample, Double?>, CoinSpread.Axis?, CoinSpread.Axis?, Double?, CoinSpread.Axis?)] = [
                ("diameter", "mm", \.diameterOptional, coin.diameter, window.diameter, spec?.diameterMM, expected?.diameter),
                ("weight", "g", \.weightOptional, coin.weight, window.weight, spec?.weightG, expected?.weight),
                ("thickness", "mm", \.thicknessMM, coin.thickness, window.thickness, spec?.thicknessMM, expected?.thickness),
            ]
            for case let (name, unit, path, measured?, matching?, mint, predicted) in rows {
                axes.append(Axis(name: name, unit: unit, values: kept.compactMap { $0[keyPath: path] }, mean: measured.mean, sigma: measured.sigma,
                                 low: matching.mean - windowSigmas * matching.sigma, high: matching.mean + windowSigmas * matching.sigma,
                                 mint: mint, expectedSigma: predicted?.sigma))
            }
        }
        self.axes = axes

        if kept.count < minimumSamples {
            problems.append("\(kept.count) sample coins kept; at least \(minimumSamples) are needed to commit")
        }
        for axis in axes {
            if let mint = axis.mint, abs(axis.mean / mint - 1) > Self.meanLimit {
                problems.append("\(axis.name) mean \(Self.figure(axis.mean)) \(axis.unit) is \(Int((abs(axis.mean / mint - 1) * 100).rounded())) % "
                    + "from the mint's \(Self.figure(mint)) \(axis.unit): these are not \(request.code) coins? Abort and teach again")
            }
            if axis.sigma > 0.2 * axis.mean {
                problems.append("\(axis.name) σ \(Self.figure(axis.sigma)) \(axis.unit) is more than a fifth of the mean: no window can be made of it")
            }
            if let predicted = axis.expectedSigma, kept.count >= 5, axis.sigma > Self.spreadWarning * predicted {
                warnings.append("\(axis.name) σ \(Self.figure(axis.sigma)) \(axis.unit) is \(String(format: "%.1f", axis.sigma / predicted)) × what the mint's "
                    + "tolerance and the mech's noise predict (\(Self.figure(predicted)) \(axis.unit)): mixed coins or a noisy sensor? See the histogram")
            }
        }

        var neighbours: [Neighbour] = []
        if let window = coin?.matchingSpread, let table {
            let others = table.denominations.filter { $0.name != request.code } + table.foreign
            for other in others {
                let apart = window.distance(diameter: other.diameter.mean, weight: other.weight.mean, thickness: nil)
                let back = other.spread.distance(diameter: window.diameter.mean, weight: window.weight.mean, thickness: nil)
                let overlap = windowSigmas / apart + windowSigmas / back >= 1
                // Far-away coins are nobody's neighbours.
                guard overlap || min(apart, back) <= 4 * windowSigmas else { continue }
                neighbours.append(Neighbour(name: other.name, origin: other.origin, spread: other.spread, apart: apart, back: back, overlap: overlap))
                guard overlap else { continue }
                let centres = "centres \(Self.sigmas(min(apart, back))) apart"
                warnings.append(other.origin == "foreign"
                    ? "the taught \(request.code) window would reach a foreign \(other.name) (\(centres)): readings between them are returned as ambiguous"
                    : "the taught \(request.code) window would overlap \(other.name)'s (\(centres)): a reading in both is accepted only if one is "
                        + "nearer by \(Self.sigmas(table.margin)), else returned as ambiguous")
            }
        }
        self.neighbours = neighbours.sorted { min($0.apart, $0.back) < min($1.apart, $1.back) }
        self.warnings = warnings
        self.problems = problems
    }

    /// What a commit writes: the kept samples fitted, or what stops it.
    package func calibration() -> Result<CoinCalibration.TaughtCoin, TeachFailure> {
        if let problem = problems.first { return .failure(TeachFailure("cannot commit: \(problem)")) }
        do throws(CalibrationError) {
            var fitted = try CoinCalibration.TaughtCoin.fit(kept.map { ($0.diameterMM, $0.weightG, $0.thicknessMM) })
            fitted.alloy = Self.alloy(kept)
            return .success(fitted)
        } catch {
            return .failure(TeachFailure("cannot commit: \(error.message)"))
        }
    }

    /// The alloy windows of the samples that measured the axis: one per composition they show
    /// (a GBP 10p taught from cupro-nickel and plated-steel coins gets two).
    static func alloy(_ samples: [TeachSession.Sample]) -> [TaughtAlloy]? {
        TaughtAlloy.fit(samples.compactMap { $0.alloy.map { ($0.lowIACS, $0.highIACS, $0.permeability) } })
    }

    /// `teach status`'s answer (docs/PROTOCOL.md).
    package func json(source: String, inhibited: Bool, now: Instant) -> JSON {
        let request = session.request
        var warnings = warnings
        if inhibited { warnings.insert("the mech is inhibited: it returns every coin itself and sends no reading; lift it (coinctl inhibit off) to teach", at: 0) }
        if table == nil { warnings.append("link '\(request.link)' is no longer a coin-table link for \(request.currency): neighbours unknown, a commit will be refused") }
        func axisJSON(_ axis: Axis) -> JSON {
            var object: [String: JSON] = [
                "unit": .string(axis.unit), "count": .int(Int64(axis.values.count)), "mean": Self.number(axis.mean), "sigma": Self.number(axis.sigma),
                "min": Self.number(axis.values.min() ?? axis.mean), "max": Self.number(axis.values.max() ?? axis.mean),
                "window": ["low": Self.number(axis.low), "high": Self.number(axis.high)],
            ]
            if let mint = axis.mint {
                object["mint"] = Self.number(mint)
                object["bias_percent"] = Self.number((axis.mean / mint - 1) * 100, places: 2)
            }
            if let expected = axis.expectedSigma { object["expected_sigma"] = Self.number(expected) }
            return .object(object)
        }
        let windowSigmas = table?.window ?? 4
        func spreadJSON(_ spread: CoinSpread) -> JSON {
            var object: [String: JSON] = [:]
            for case let (name, axis?) in [("diameter", spread.diameter), ("weight", spread.weight), ("thickness", spread.thickness)] as [(String, CoinSpread.Axis?)] {
                object[name] = ["mean": Self.number(axis.mean), "sigma": Self.number(axis.sigma),
                                "low": Self.number(axis.mean - windowSigmas * axis.sigma), "high": Self.number(axis.mean + windowSigmas * axis.sigma)]
            }
            return .object(object)
        }
        func sampleJSON(_ sample: TeachSession.Sample) -> JSON {
            [Self.number(sample.diameterMM), Self.number(sample.weightG), sample.thicknessMM.map { Self.number($0) } ?? .null]
        }
        return [
            "teaching": true, "source": .string(source), "currency": .string(request.currency), "code": .string(request.code),
            "link": .string(request.link), "file": .string(request.file), "by": .string(session.by),
            "started_s_ago": Self.number(Double((now - session.startedAt).nanoseconds) / 1e9, places: 1),
            "coins": .int(Int64(request.coins)), "collected": .int(Int64(session.samples.count)), "kept": .int(Int64(kept.count)),
            "not_collected": .int(Int64(session.notCollected)), "minimum": .int(Int64(minimumSamples)), "committable": .bool(problems.isEmpty),
            "window_sigma": Self.number(windowSigmas), "margin_sigma": Self.number(table?.margin ?? 1.5),
            "axes": .object(Dictionary(uniqueKeysWithValues: axes.map { ($0.name, axisJSON($0)) })),
            "left_out": .array(leftOut.map { out in
                ["device_seq": .int(Int64(out.sample.deviceSeq)), "epoch": .int(out.sample.epoch), "reading": sampleJSON(out.sample), "why": .string(out.why)]
            }),
            "neighbours": .array(neighbours.map { n in
                ["name": .string(n.name), "origin": .string(n.origin), "separation_sigma": Self.number(n.apart, places: 2),
                 "their_sigma": Self.number(n.back, places: 2), "overlap": .bool(n.overlap), "window": spreadJSON(n.spread)]
            }),
            "samples": .array(session.samples.map(sampleJSON)),
            "alloy": .array((coin?.alloy ?? []).map { alloy in
                var object: [String: JSON] = [
                    "samples": .int(Int64(alloy.samples)),
                    "conductivity_low": ["mean": Self.number(alloy.conductivityLow.mean), "sigma": Self.number(alloy.conductivityLow.sigma)],
                    "conductivity_high": ["mean": Self.number(alloy.conductivityHigh.mean), "sigma": Self.number(alloy.conductivityHigh.sigma)],
                ]
                if let log = alloy.logPermeability {
                    object["permeability"] = ["mean": Self.number(exp(log.mean)), "log_sigma": Self.number(log.sigma)]
                }
                return .object(object)
            }),
            "warnings": .array(warnings.map { .string($0) }),
            "problems": .array(problems.map { .string($0) }),
        ]
    }

    /// Samples far from the others, by index, with why: their distance from the medians, each
    /// axis in its robust σ (the median absolute deviation, as σ of a normal spread), over the
    /// three axes as coin-table measures, is above `outlierLimit`. Fewer than eight samples give
    /// no median worth trusting: none is left out then.
    package static func outliers(_ samples: [TeachSession.Sample]) -> [Int: String] {
        guard samples.count >= 8 else { return [:] }
        func median(_ values: [Double]) -> Double {
            let sorted = values.sorted()
            return sorted.count % 2 == 1 ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
        }
        let thickness = samples.allSatisfy { $0.thicknessMM != nil }
        let axes = [("diameter", "mm", samples.map(\.diameterMM)), ("weight", "g", samples.map(\.weightG)),
                    ("thickness", "mm", thickness ? samples.map { $0.thicknessMM! } : [])].filter { !$0.2.isEmpty }
        // Centre and robust σ per axis; σ never below the fit's floor.
        let robust = axes.map { axis -> (centre: Double, sigma: Double) in
            let centre = median(axis.2)
            return (centre, max(1.4826 * median(axis.2.map { abs($0 - centre) }), abs(centre) * 0.0005))
        }
        var found: [Int: String] = [:]
        for index in samples.indices {
            let z = axes.indices.map { (axes[$0].2[index] - robust[$0].centre) / robust[$0].sigma }
            let distance = z.reduce(0) { $0 + $1 * $1 }.squareRoot()
            guard distance > outlierLimit, let worst = z.indices.max(by: { abs(z[$0]) < abs(z[$1]) }) else { continue }
            let (name, unit, values) = axes[worst]
            found[index] = "\(name) \(figure(values[index])) \(unit) where the others' median is \(figure(robust[worst].centre)) \(unit), "
                + "\(String(format: "%.0f", distance))σ from the others over every axis"
        }
        return found
    }

    /// Four significant decimals are more than any mech measures.
    package static func number(_ value: Double, places: Int = 4) -> JSON {
        let scale = pow(10, Double(places))
        return .double((value * scale).rounded() / scale)
    }

    package static func figure(_ value: Double) -> String { String(format: "%.3f", value) }

    package static func sigmas(_ value: Double) -> String { String(format: "%.1fσ", value) }
}

extension TeachSession.Sample {
    /// The axes as optionals, so one key path reads any of the three.
    package var diameterOptional: Double? { diameterMM }
    package var weightOptional: Double? { weightG }
}
