import CoinFacts

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

    /// "USD:quarter", "slug", "washer", "foreign:EUR_2".
    public var description: String {
        switch self {
        case .coin(let spec): "\(spec.currency):\(spec.code)"
        case .slug: "slug"
        case .washer: "washer"
        case .foreign(let spec): "foreign:\(spec.code)"
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
}

/// Draws insertions for a scenario, reproducibly from its seed.
public struct InsertionGenerator: Sendable {
    public let scenario: Scenario
    private var rng: SplitMix64
    private var count = 0
    private let table: [CoinSpec]
    private let foreignTable: [CoinSpec]
    private let totalWeight: Double

    public init(scenario: Scenario) {
        self.scenario = scenario
        rng = SplitMix64(seed: scenario.seed)
        table = CoinTables.table(for: scenario.currency) ?? CoinTables.usd
        foreignTable = CoinTables.table(for: scenario.foreignCurrency) ?? CoinTables.eur
        totalWeight = scenario.mix.reduce(0) { $0 + $1.weight }
    }

    public mutating func next() -> Insertion {
        count += 1
        let roll = Double.random(in: 0..<1, using: &rng)
        let s = scenario
        let kind: CoinKind
        if roll < s.slugFraction {
            kind = .slug
        } else if roll < s.slugFraction + s.washerFraction {
            kind = .washer
        } else if roll < s.slugFraction + s.washerFraction + s.foreignFraction {
            kind = .foreign(foreignTable.randomElement(using: &rng)!)
        } else {
            kind = .coin(pickFromMix())
        }
        let reading = Self.measure(kind, number: count, scenario: s, rng: &rng)
        return Insertion(number: count, kind: kind, diameterMM: reading.diameter, weightG: reading.weight, thicknessMM: reading.thickness)
    }

    /// What the scenario's mech reads for `kind` at insertion `number`: a genuine coin's own
    /// figures (varying within its mint tolerance if `mech.mint_spread`), through the mech's bias
    /// and drift, plus the scenario's noise; slugs and washers are random discs. Thickness is nil
    /// when the mech does not measure it. The bench draws its populations through this too.
    public static func measure(
        _ kind: CoinKind, number: Int, scenario s: Scenario, rng: inout SplitMix64
    ) -> (diameter: Double, weight: Double, thickness: Double?) {
        var diameter: Double, weight: Double, thickness: Double
        let mech = s.mech
        switch kind {
        case .coin(let spec), .foreign(let spec):
            diameter = spec.diameterMM
            weight = spec.weightG
            thickness = spec.thicknessMM ?? 1.8
            if mech.mintSpread {
                let sigma = MintTolerance.standardDeviation(of: spec)
                diameter += rng.gaussian() * sigma.diameter
                weight += rng.gaussian() * sigma.weight
                thickness += rng.gaussian() * (sigma.thickness ?? thickness * MintTolerance.assumedRelative.thickness / 3)
            }
            diameter = s.diameterNoise.apply(mech.readDiameter(diameter, number: number), &rng)
            weight = s.weightNoise.apply(mech.readWeight(weight, number: number), &rng)
            thickness = s.thicknessNoise.apply(mech.readThickness(thickness, number: number), &rng)
        case .slug:
            diameter = mech.readDiameter(Double.random(in: 15...30, using: &rng), number: number)
            weight = mech.readWeight(Double.random(in: 2...12, using: &rng), number: number)
            thickness = mech.readThickness(Double.random(in: 1.2...2.6, using: &rng), number: number)
        case .washer:
            diameter = mech.readDiameter(Double.random(in: 16...26, using: &rng), number: number)
            weight = mech.readWeight(Double.random(in: 0.8...2.2, using: &rng), number: number)
            thickness = mech.readThickness(Double.random(in: 0.8...1.6, using: &rng), number: number)
        }
        return (diameter, weight, s.measuresThickness ? thickness : nil)
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
