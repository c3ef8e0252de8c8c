import CoinFacts
import CoinMechCalibration
import CoinMechPluginKit
import Foundation

/// Everything a coin-table link scores readings against, built from its configuration: its own
/// denominations (nominal or taught windows) and the foreign coins that could come near them.
struct CandidateList {
    /// ISO 4217 code of the link's own denominations.
    let currency: String
    let own: [Candidate]
    let foreign: [Candidate]
    let noise: SensorNoise
    let window: Double
    let margin: Double
    /// How many times likelier a reading must be of the accepted denomination than of any foreign
    /// coin: crediting a foreign coin loses money, where returning a genuine one costs a retry.
    let foreignOdds: Double
    let requireWeight: Bool
    /// Whether the windows follow the mech's drift, and how far at most (relative, per axis).
    let followDrift: Bool
    let maxDrift: Double
    /// Where the calibration came from, for `describe`: nil, a path, or "inline".
    let calibrationSource: String?
    /// The mech's bias as the taught coins show it (taught mean ÷ mint figure, per axis), which
    /// foreign coins are shifted by; 1 where nothing was taught.
    let bias: (diameter: Double, weight: Double, thickness: Double)
    /// What teach mode measured, by code (empty before teaching).
    let taught: [String: CoinCalibration.TaughtCoin]
    let warnings: [String]

    init(_ config: CoinTableConfig) throws(PluginConfigError) {
        let currency = config.currency.uppercased()
        guard let table = CoinTables.table(for: currency) else {
            throw PluginConfigError("key 'currency': no built-in table for '\(config.currency)' (known: USD, EUR, GBP)")
        }
        let codes = Set(table.map(\.code))
        for code in (config.denominations ?? []) + (config.tolerances.map { Array($0.keys) } ?? []) where !codes.contains(code) {
            throw PluginConfigError("unknown denomination '\(code)' for \(currency) (known: \(table.map(\.code).joined(separator: ", ")))")
        }
        let typical = SensorNoise.typical
        let noise = SensorNoise(diameter: config.sensor_noise?.diameter ?? typical.diameter, weight: config.sensor_noise?.weight ?? typical.weight,
                            thickness: config.sensor_noise?.thickness ?? typical.thickness)
        try require(noise.diameter, in: 0.0001...0.2, key: "sensor_noise.diameter")
        try require(noise.weight, in: 0.0001...0.2, key: "sensor_noise.weight")
        try require(noise.thickness, in: 0.0001...0.2, key: "sensor_noise.thickness")
        let window = config.window ?? CoinTableConfig.defaultWindow
        try require(window, in: 1...10, key: "window")
        let margin = config.margin ?? CoinTableConfig.defaultMargin
        try require(margin, in: 0...10, key: "margin")
        foreignOdds = config.foreign_odds ?? CoinTableConfig.defaultForeignOdds
        try require(foreignOdds, in: 1...1e12, key: "foreign_odds")
        let requireWeight = config.require_weight ?? true
        followDrift = config.follow_drift ?? true
        maxDrift = config.max_drift ?? CoinTableConfig.defaultMaxDrift
        try require(maxDrift, in: 0...0.15, key: "max_drift")
        (self.noise, self.window, self.margin, self.requireWeight) = (noise, window, margin, requireWeight)
        if let tolerance = config.tolerance { try require(tolerance, in: 0.001...0.5, key: "tolerance") }
        for (code, axes) in config.tolerances ?? [:] {
            for (axis, value) in [("diameter", axes.diameter), ("weight", axes.weight), ("thickness", axes.thickness)] {
                if let value { try require(value, in: 0.001...0.5, key: "tolerances.\(code).\(axis)") }
            }
        }

        var warnings: [String] = []
        let calibration: CoinCalibration?
        switch config.calibration {
        case nil:
            calibration = nil
            calibrationSource = nil
        case .inline(let inline):
            calibration = inline
            calibrationSource = "inline"
        case .file(let path):
            guard path.hasPrefix("/") else { throw PluginConfigError("key 'calibration': '\(path)' must be an absolute path") }
            calibrationSource = path
            if FileManager.default.fileExists(atPath: path) {
                do throws(CalibrationError) {
                    calibration = try CoinCalibration.load(path: path)
                } catch {
                    throw PluginConfigError(error.message)
                }
            } else {
                calibration = nil
                warnings.append("calibration \(path) does not exist yet: nominal windows until the mech is taught")
            }
        }
        let taught = try calibration.map { calibration throws(PluginConfigError) in try Self.check(calibration, table: table, currency: currency) } ?? [:]
        self.taught = taught

        let wanted = config.denominations.map(Set.init) ?? codes
        let own = table.filter { wanted.contains($0.code) }.map { spec in
            let limit = config.tolerances?[spec.code]
            return Candidate(
                spec: spec, origin: taught[spec.code] == nil ? .nominal : .taught,
                spread: taught[spec.code]?.matchingSpread ?? Self.nominalSpread(spec, noise),
                limit: (limit?.diameter ?? config.tolerance, limit?.weight ?? config.tolerance, limit?.thickness ?? config.tolerance))
        }
        self.own = own
        self.currency = currency
        guard own.count <= MatchTable.maxRows / 2 else { throw PluginConfigError("a coin table has at most \(MatchTable.maxRows / 2) denominations") }

        // Taught windows show the mech's bias; foreign coins are read through the same sensors.
        func ratio(_ pairs: [(Double, Double)]) -> Double {
            let ratios = pairs.map { $0.0 / $0.1 }.sorted()
            return ratios.isEmpty ? 1 : ratios[ratios.count / 2]
        }
        let taughtOwn = table.compactMap { spec in taught[spec.code].map { (spec, $0) } }
        let bias: (diameter: Double, weight: Double, thickness: Double) = (ratio(taughtOwn.map { ($1.diameter.mean, $0.diameterMM) }), ratio(taughtOwn.map { ($1.weight.mean, $0.weightG) }),
                ratio(taughtOwn.compactMap { spec, coin in coin.thickness.flatMap { t in spec.thicknessMM.map { (t.mean, $0) } } }))

        self.bias = bias
        let foreignCurrencies = (config.foreign ?? ["USD", "EUR", "GBP"].filter { $0 != currency }).map { $0.uppercased() }
        var foreign: [Candidate] = []
        for other in foreignCurrencies {
            guard other != currency, let otherTable = CoinTables.table(for: other) else {
                throw PluginConfigError("key 'foreign': '\(other)' is not a built-in currency other than \(currency) (known: USD, EUR, GBP)")
            }
            for spec in otherTable {
                var spread = Self.nominalSpread(spec, noise)
                spread.diameter.mean *= bias.diameter
                spread.weight.mean *= bias.weight
                spread.thickness?.mean *= bias.thickness
                var candidate = Candidate(spec: spec, origin: .foreign, spread: spread, limit: (nil, nil, nil))
                // Foreign coins are scored only on readings with a weight (the link's own may be judged without).
                guard own.contains(where: { Self.canCompete(candidate, with: $0, window: window, margin: margin, withWeight: true) }) else { continue }
                if let twin = own.first(where: { candidate.centreDistance(in: $0, withWeight: true) <= window }) {
                    guard candidate.spread.thickness != nil, twin.spread.thickness != nil else {
                        warnings.append("\(candidate.name) cannot be told from \(twin.name) without a thickness, and one has none recorded: "
                            + "not scored, so a \(candidate.name) inside the \(twin.name) window is credited as one")
                        continue
                    }
                    candidate.onlyWithThickness = true
                    warnings.append("\(candidate.name) is told from \(twin.name) by its thickness alone: scored only on readings with a thickness")
                }
                foreign.append(candidate)
            }
        }
        // Those scored only with a thickness last: a reading without one scans the rows before them.
        self.foreign = Array((foreign.filter { !$0.onlyWithThickness } + foreign.filter(\.onlyWithThickness)).prefix(MatchTable.maxRows - own.count))

        for (i, a) in own.enumerated() {
            for b in own[(i + 1)...] {
                let apart = a.centreDistance(in: b, withWeight: true), back = b.centreDistance(in: a, withWeight: true)
                // Along the line between the centres, both windows hold a stretch of it.
                guard window / apart + window / back >= 1 else { continue }
                warnings.append("windows of \(a.name) and \(b.name) overlap (centres \(sigmas(min(apart, back))) apart): "
                    + "a reading in both is accepted only if one is nearer by \(sigmas(margin)), else returned as ambiguous")
            }
        }
        self.warnings = warnings
    }

    /// All candidates in scan order: own denominations first, then foreign coins.
    var all: [Candidate] { own + foreign }

    /// A denomination's window before teaching: the mint's figures, the mint's tolerance read as
    /// ±3σ, and the sensor noise.
    static func nominalSpread(_ spec: CoinSpec, _ noise: SensorNoise) -> CoinSpread {
        let sigma = MintTolerance.standardDeviation(of: spec)
        return .nominal(diameter: spec.diameterMM, weight: spec.weightG, thickness: spec.thicknessMM, mintSigma: sigma, sensorNoise: noise)
    }

    /// Whether foreign coin `f` can ever be the nearest or the runner-up to a reading inside own
    /// window `o`: a reading there lies within `window` σ of o's centre, so (triangle inequality,
    /// in f's σ) at least `distance(o's centre) − window × σ ratio` from f.
    static func canCompete(_ f: Candidate, with o: Candidate, window: Double, margin: Double, withWeight: Bool) -> Bool {
        o.centreDistance(in: f, withWeight: withWeight) - window * o.sigmaRatio(to: f) < window + margin
    }

    /// Validates a calibration against the mint figures; returns its coins by code.
    static func check(_ calibration: CoinCalibration, table: [CoinSpec], currency: String) throws(PluginConfigError) -> [String: CoinCalibration.TaughtCoin] {
        guard calibration.format == CoinCalibration.currentFormat else {
            throw PluginConfigError("key 'calibration': format \(calibration.format) where \(CoinCalibration.currentFormat) was expected")
        }
        guard calibration.currency.uppercased() == currency else {
            throw PluginConfigError("key 'calibration': taught for \(calibration.currency), but this link is \(currency)")
        }
        for (code, coin) in calibration.denominations.sorted(by: { $0.key < $1.key }) {
            guard let spec = table.first(where: { $0.code == code }) else {
                throw PluginConfigError("key 'calibration': unknown denomination '\(code)' for \(currency)")
            }
            guard coin.samples >= CoinCalibration.minimumSamples else {
                throw PluginConfigError("key 'calibration': \(code) was taught from \(coin.samples) coins; at least \(CoinCalibration.minimumSamples) are needed")
            }
            let axes: [(String, CoinSpread.Axis?, Double?)] = [
                ("diameter", coin.diameter, spec.diameterMM), ("weight", coin.weight, spec.weightG), ("thickness", coin.thickness, spec.thicknessMM),
            ]
            for (number, alloy) in (coin.alloy ?? []).enumerated() {
                let axes = [("conductivity_low", alloy.conductivityLow), ("conductivity_high", alloy.conductivityHigh)]
                    + (alloy.logPermeability.map { [("log_permeability", $0)] } ?? [])
                for (axis, taught) in axes where !(taught.mean.isFinite && taught.sigma.isFinite && taught.sigma > 0 && (axis == "log_permeability" || taught.mean >= 0)) {
                    throw PluginConfigError("key 'calibration': \(code) alloy \(number + 1) \(axis) mean \(taught.mean), σ \(taught.sigma) is not a usable window")
                }
            }
            for case let (axis, taught?, nominal) in axes {
                guard taught.mean.isFinite, taught.sigma.isFinite, taught.mean > 0, taught.sigma > 0, taught.sigma <= taught.mean * 0.2 else {
                    throw PluginConfigError("key 'calibration': \(code) \(axis) mean \(taught.mean), σ \(taught.sigma) is not a usable window")
                }
                // A window far from the mint's figure was taught with the wrong coins.
                if let nominal, abs(taught.mean / nominal - 1) > 0.15 {
                    throw PluginConfigError("key 'calibration': \(code) \(axis) mean \(taught.mean) is "
                        + "\(Int((abs(taught.mean / nominal - 1) * 100).rounded())) % from the mint's \(nominal): taught with other coins?")
                }
            }
        }
        return calibration.denominations
    }
}

/// "1.5σ": a distance in standard deviations, one decimal.
func sigmas(_ value: Double) -> String { String(format: "%.1fσ", value) }
