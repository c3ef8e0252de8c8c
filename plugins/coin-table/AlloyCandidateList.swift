import CoinFacts
import CoinMechCalibration
import CoinMechEddyCurrent
import CoinMechPluginKit
import Foundation

/// What a coin-table link scores readings with an alloy axis against: every composition of its
/// own denominations (taught where teach mode measured them, else the mints' through the
/// physics), and every composition of the foreign coins it knows (the other built-in
/// currencies and the known twins of `WorldCoins`), never credited.
struct AlloyCandidateList {
    /// One composition of one coin: its geometry (the coin's own window) and its alloy window.
    struct Row {
        let candidate: Candidate
        let alloy: AlloyWindow
        /// Index into `CandidateList.own`; nil for a foreign coin.
        let own: Int?

        var name: String { candidate.name }
    }

    let enabled: Bool
    let sensor: EddyCurrentSensor
    let window: Double
    let noise: Double
    let temperatures: ClosedRange<Double>
    let own: [Row]
    let foreign: [Row]
    /// The mech's bias on each frequency as the taught coins show it (taught ÷ nominal), which
    /// foreign coins are moved by; 1 where nothing was taught.
    let bias: (low: Double, high: Double)
    let warnings: [String]

    var all: [Row] { own + foreign }

    init(_ config: CoinTableConfig, _ list: CandidateList) throws(PluginConfigError) {
        let settings = config.alloy
        let frequencies = settings?.frequencies_hz ?? [EddyCurrentSensor.reference.lowHz, EddyCurrentSensor.reference.highHz]
        guard frequencies.count == 2, frequencies.allSatisfy({ $0.isFinite && $0 >= 1_000 && $0 <= 20_000_000 }), frequencies[0] < frequencies[1] else {
            throw PluginConfigError("key 'alloy.frequencies_hz' must be two frequencies in Hz, low then high, between 1000 and 20000000")
        }
        let sensor = EddyCurrentSensor(lowHz: frequencies[0], highHz: frequencies[1])
        let celsius = settings?.temperature_c ?? CoinTableConfig.defaultTemperatures
        guard celsius.count == 2, celsius.allSatisfy({ $0.isFinite && (-40...85).contains($0) }), celsius[0] <= celsius[1] else {
            throw PluginConfigError("key 'alloy.temperature_c' must be the lowest and highest temperature in °C, between -40 and 85")
        }
        let temperatures = celsius[0]...celsius[1]
        let window = settings?.window ?? CoinTableConfig.defaultAlloyWindow
        try require(window, in: 2...10, key: "alloy.window")
        let noise = config.sensor_noise?.alloy ?? CoinTableConfig.defaultAlloyNoise
        try require(noise, in: 0.0001...0.2, key: "sensor_noise.alloy")
        let thicknessNoise = list.noise.thickness

        func nominal(_ spec: CoinSpec, _ origin: Candidate.Origin) -> [AlloyWindow] {
            (CoinCompositions.variants(of: spec) ?? []).map {
                AlloyWindow.nominal($0, of: spec, sensor: sensor, noise: noise, diameterNoise: list.noise.diameter, thicknessNoise: thicknessNoise,
                                    temperatures: temperatures, origin: origin)
            }
        }

        var warnings: [String] = []
        var own: [Row] = []
        var ratios: (low: [Double], high: [Double]) = ([], [])
        for (index, candidate) in list.own.enumerated() {
            let mint = nominal(candidate.spec, .nominal)
            if mint.isEmpty { warnings.append("\(candidate.name): no composition known, so its alloy cannot be judged: readings with an alloy axis near it are returned") }
            guard let taught = list.taught[candidate.spec.code]?.alloy, !taught.isEmpty else {
                own += mint.map { Row(candidate: candidate, alloy: $0, own: index) }
                continue
            }
            // Each taught composition moves with temperature as the mint's composition nearest it does.
            let learnt = taught.enumerated().map { number, alloy in
                let centre = AlloyWindow(name: "", origin: .taught, low: alloy.conductivityLow, high: alloy.conductivityHigh,
                                         lowUnmeasured: 0, highUnmeasured: 0, logPermeability: alloy.logPermeability ?? .init(mean: 0, sigma: 1),
                                         perKelvin: (0, 0))
                let perKelvin = mint.min(by: { centre.distance(to: $0) < centre.distance(to: $1) })?.perKelvin ?? (0, 0)
                return AlloyWindow.taught(alloy, index: number, of: taught.count, perKelvin: perKelvin, temperatures: temperatures)
            }
            own += learnt.map { Row(candidate: candidate, alloy: $0, own: index) }
            // A composition the sample coins did not show keeps the mint's window.
            for composition in mint {
                if let nearest = learnt.min(by: { $0.distance(to: composition) < $1.distance(to: composition) }), nearest.distance(to: composition) <= window {
                    ratios.low.append(nearest.low.mean / composition.low.mean)
                    ratios.high.append(nearest.high.mean / composition.high.mean)
                } else {
                    own.append(Row(candidate: candidate, alloy: composition, own: index))
                    warnings.append("\(candidate.name) \(composition.name): not among the taught coins, judged on the mint's composition")
                }
            }
        }
        func median(_ values: [Double]) -> Double { values.isEmpty ? 1 : values.sorted()[values.count / 2] }
        let bias = (low: median(ratios.low), high: median(ratios.high))

        var foreign: [Row] = []
        let others = (config.foreign ?? ["USD", "EUR", "GBP"].filter { $0 != list.currency }).map { $0.uppercased() }
        let foreignSpecs = others.flatMap { CoinTables.table(for: $0) ?? [] } + WorldCoins.all
        for spec in foreignSpecs {
            var spread = CandidateList.nominalSpread(spec, list.noise)
            spread.diameter.mean *= list.bias.diameter
            spread.weight.mean *= list.bias.weight
            spread.thickness?.mean *= list.bias.thickness
            let candidate = Candidate(spec: spec, origin: .foreign, spread: spread, limit: (nil, nil, nil))
            foreign += nominal(spec, .foreign).map { Row(candidate: candidate, alloy: $0.biased(low: bias.low, high: bias.high), own: nil) }
        }
        guard own.count + foreign.count <= MatchTable.maxRows else { throw PluginConfigError("too many compositions to score (\(own.count + foreign.count))") }
        enabled = settings?.enabled ?? true
        self.sensor = sensor
        self.window = window
        self.noise = noise
        self.temperatures = temperatures
        self.own = own
        self.foreign = foreign
        self.bias = bias
        self.warnings = warnings
    }
}
