import CoinFacts
import CoinMechModel

/// What physically went into the mech.
public enum CoinKind: Sendable, Hashable, CustomStringConvertible {
    /// A genuine coin of the scenario's currency.
    case coin(CoinSpec)
    /// A steel disc of no currency.
    case slug
    /// A light washer or token.
    case washer
    /// A genuine coin of another currency.
    case foreign(CoinSpec)
    /// Something made to pass for a coin: a sized washer or slug, a plated copy, a shaved coin.
    case fraud(FraudItem)

    /// "USD:quarter", "slug", "washer", "foreign:EUR_2", "fraud:brass_slug:quarter".
    public var description: String {
        switch self {
        case .coin(let spec): "\(spec.currency):\(spec.code)"
        case .slug: "slug"
        case .washer: "washer"
        case .foreign(let spec): "foreign:\(spec.code)"
        case .fraud(let item): "fraud:\(item)"
        }
    }

    /// The value a correct acceptor credits for it: only genuine coins of the currency count,
    /// at their face value as the mints state it (`FaceValues`, not the tables a plugin reads).
    public var creditableValue: (currency: String, valueMinor: Int64)? {
        if case .coin(let spec) = self { return (spec.currency, FaceValues.faceValue(of: spec)) }
        return nil
    }
}

/// One insertion: the true item and the mech's measurement of it.
public struct Insertion: Sendable, Hashable {
    /// 1 for the first insertion of the session.
    public var number: Int
    public var kind: CoinKind
    public var diameterMM: Double
    public var weightG: Double
    public var thicknessMM: Double?
    /// The alloy axis, from a mech with an eddy-current sensor (the scenario's `alloy` block).
    public var alloy: AlloySignature?
}

/// Draws insertions for a scenario, reproducibly from its seed.
public struct InsertionGenerator: Sendable {
    public let scenario: Scenario
    private var rng: SplitMix64
    /// The alloy axis's draws come from a stream of their own, so a scenario measures the same
    /// diameters, weights and thicknesses with the sensor as without it.
    private var alloyRng: SplitMix64
    private var count = 0
    private let table: [CoinSpec]
    private let foreignTable: [CoinSpec]
    private let twins: [CoinSpec]
    private let totalWeight: Double

    public init(scenario: Scenario) {
        self.scenario = scenario
        rng = SplitMix64(seed: scenario.seed)
        alloyRng = SplitMix64(seed: scenario.seed ^ 0xA110_7A11_0700_0001)
        table = CoinTables.table(for: scenario.currency) ?? CoinTables.usd
        foreignTable = CoinTables.table(for: scenario.foreignCurrency) ?? CoinTables.eur
        twins = WorldCoins.twins(of: scenario.currency)
        totalWeight = scenario.mix.reduce(0) { $0 + $1.weight }
    }

    public mutating func next() -> Insertion {
        count += 1
        let roll = Double.random(in: 0..<1, using: &rng)
        let s = scenario
        var kind: CoinKind?
        var threshold = s.slugFraction
        if roll < threshold { kind = .slug }
        threshold += s.washerFraction
        if kind == nil, roll < threshold { kind = .washer }
        threshold += s.foreignFraction
        if kind == nil, roll < threshold { kind = .foreign(foreignTable.randomElement(using: &rng)!) }
        threshold += s.twinFraction
        if kind == nil, roll < threshold, !twins.isEmpty { kind = .foreign(twins.randomElement(using: &rng)!) }
        for attack in FraudItem.Attack.allCases where kind == nil {
            threshold += s.fraudFractions[attack] ?? 0
            if roll < threshold { kind = fraud(attack) }
        }
        let chosen = kind ?? .coin(pickFromMix())
        let measured = Self.measured(chosen, number: count, scenario: s, rng: &rng)
        var insertion = Insertion(number: count, kind: chosen, diameterMM: measured.reading.diameter, weightG: measured.reading.weight,
                                  thicknessMM: measured.reading.thickness)
        if let sensor = s.alloy {
            insertion.alloy = AlloyReading.measure(chosen, truth: measured.truth, measuredDiameterMM: measured.reading.diameter,
                                                   measuredThicknessMM: measured.reading.thickness,
                                                   number: count, sensor: sensor, spread: s.mech.mintSpread, rng: &alloyRng)
        }
        return insertion
    }

    /// A fraud of `attack` against this currency: sized to one of its coins in turn, or its shave.
    private mutating func fraud(_ attack: FraudItem.Attack) -> CoinKind? {
        FraudItem.make(attack, currency: scenario.currency, choosing: &rng).map(CoinKind.fraud)
    }

    /// What the scenario's mech reads for `kind` at insertion `number`: a genuine coin's own
    /// figures (varying within its mint tolerance if `mech.mint_spread`), through the mech's bias
    /// and drift, plus the scenario's noise; slugs and washers are random discs. Thickness is nil
    /// when the mech does not measure it. The bench draws its populations through this too.
    public static func measure(
        _ kind: CoinKind, number: Int, scenario s: Scenario, rng: inout SplitMix64
    ) -> (diameter: Double, weight: Double, thickness: Double?) {
        measured(kind, number: number, scenario: s, rng: &rng).reading
    }

    /// The same, with the item's true figures (what the alloy sensor's physics needs).
    public static func measured(
        _ kind: CoinKind, number: Int, scenario s: Scenario, rng: inout SplitMix64
    ) -> (truth: (diameter: Double, weight: Double, thickness: Double), reading: (diameter: Double, weight: Double, thickness: Double?)) {
        var diameter: Double, weight: Double, thickness: Double
        let truth: (diameter: Double, weight: Double, thickness: Double)
        let mech = s.mech
        switch kind {
        case .coin(let spec), .foreign(let spec):
            diameter = spec.diameterMM
            weight = spec.weightG
            thickness = spec.thicknessMM ?? FraudItem.unrecordedThicknessMM
            if mech.mintSpread {
                let sigma = MintTolerance.standardDeviation(of: spec)
                diameter += rng.gaussian() * sigma.diameter
                weight += rng.gaussian() * sigma.weight
                thickness += rng.gaussian() * (sigma.thickness ?? thickness * MintTolerance.assumedRelative.thickness / 3)
            }
            truth = (diameter, weight, thickness)
            diameter = s.diameterNoise.apply(mech.readDiameter(diameter, number: number), &rng)
            weight = s.weightNoise.apply(mech.readWeight(weight, number: number), &rng)
            thickness = s.thicknessNoise.apply(mech.readThickness(thickness, number: number), &rng)
        case .slug:
            truth = (Double.random(in: 15...30, using: &rng), Double.random(in: 2...12, using: &rng), Double.random(in: 1.2...2.6, using: &rng))
            diameter = mech.readDiameter(truth.diameter, number: number)
            weight = mech.readWeight(truth.weight, number: number)
            thickness = mech.readThickness(truth.thickness, number: number)
        case .washer:
            truth = (Double.random(in: 16...26, using: &rng), Double.random(in: 0.8...2.2, using: &rng), Double.random(in: 0.8...1.6, using: &rng))
            diameter = mech.readDiameter(truth.diameter, number: number)
            weight = mech.readWeight(truth.weight, number: number)
            thickness = mech.readThickness(truth.thickness, number: number)
        case .fraud(let item):
            // A careful maker: ±0.3 % on the diameter, ±1.5 % on the thickness and the weight (1σ).
            truth = (item.diameterMM * (1 + 0.003 * rng.gaussian()), item.weightG * (1 + 0.015 * rng.gaussian()),
                     item.thicknessMM * (1 + 0.015 * rng.gaussian()))
            diameter = s.diameterNoise.apply(mech.readDiameter(truth.diameter, number: number), &rng)
            weight = s.weightNoise.apply(mech.readWeight(truth.weight, number: number), &rng)
            thickness = s.thicknessNoise.apply(mech.readThickness(truth.thickness, number: number), &rng)
        }
        return (truth, (diameter, weight, s.measuresThickness ? thickness : nil))
    }

    /// Seconds until the next insertion after insertion `number` (bursts included).
    public mutating func gap(after number: Int) -> Double {
        if let burst = scenario.burst {
            // Every `every_s` seconds' worth of coins, the next `coins` come at the burst rate.
            let period = max(1, Int(burst.everySeconds * scenario.ratePerSecond)) + burst.coins
            if number % period >= period - burst.coins { return 1 / burst.ratePerSecond }
        }
        // Coins cannot follow each other faster than the mech's mechanics allow.
        return max(Self.minimumGap, rng.exponential(mean: 1 / scenario.ratePerSecond))
    }

    /// The shortest gap between two insertions outside bursts: 50 ms (20 coins/s).
    public static let minimumGap = 0.05

    /// Random bytes for a garbage burst.
    public mutating func garbage(_ count: Int) -> [UInt8] {
        (0..<count).map { _ in
            var byte = UInt8.random(in: 0...255, using: &rng)
            if byte == UInt8(ascii: "$") { byte = UInt8(ascii: "#") }  // garbage never starts a sentence
            return byte
        }
    }

    public mutating func chance(_ p: Double) -> Bool { rng.chance(p) }

    private mutating func pickFromMix() -> CoinSpec {
        var roll = Double.random(in: 0..<totalWeight, using: &rng)
        for (code, weight) in scenario.mix {
            if roll < weight { return table.first { $0.code == code }! }
            roll -= weight
        }
        return table.first { $0.code == scenario.mix.last!.code }!
    }
}
