import CoinFacts
import CoinMechEddyCurrent
import CoinMechModel

/// What the simulated mech's eddy-current sensor reads of an insertion: the item's layers and
/// metals through the physics of `EddyCurrentSensor` (never a table of expected answers), at
/// the cabinet's temperature, converted at the diameter and thickness the mech measured; then
/// the coil's gain error and its noise.
public enum AlloyReading {
    /// How much one coin's metal differs from its handbook figure (1σ): a coin alloy within its
    /// composition tolerance (cupro-nickel's nickel ±1 % moves its resistivity by about ±3 %, read
    /// as ±3σ), and a plated steel blank's permeability (mints hold their blanks' signature to a
    /// tolerance so that validators work: ±15 % read as ±3σ).
    public static let coinConductivitySpread = 0.012
    public static let coinPermeabilitySpread = 0.05
    /// The same for what frauds are made of: whatever metal was to hand.
    public static let fraudConductivitySpread = 0.03
    public static let fraudPermeabilitySpread = 0.15

    /// The layers and metals of `kind`; for a coin minted in several compositions, one drawn by
    /// their shares in circulation. A random washer gets the hole its weight needs.
    public static func construction(of kind: CoinKind, trueDiameter: Double, trueWeight: Double, trueThickness: Double,
                                    rng: inout SplitMix64) -> CoinConstruction? {
        switch kind {
        case .coin(let spec), .foreign(let spec):
            guard let variants = CoinCompositions.variants(of: spec), !variants.isEmpty else { return nil }
            var roll = Double.random(in: 0..<variants.reduce(0) { $0 + $1.share }, using: &rng)
            for variant in variants {
                if roll < variant.share { return variant.construction }
                roll -= variant.share
            }
            return variants.last!.construction
        case .slug:
            return .solid(Materials.steel)
        case .washer:
            let solid = 7.85 * Double.pi * trueDiameter * trueDiameter / 400 * trueThickness / 10
            let hole = (1 - min(1, trueWeight / solid)).squareRoot()
            return .bimetallic(ring: LayerStack([.init(Materials.steel, .rest)]), centre: LayerStack([]), centreDiameter: hole)
        case .fraud(let item):
            return item.construction
        }
    }

    /// The alloy axis the mech sends for insertion `number` of `kind`; nil for an item whose
    /// composition is not known (none of CoinMech's tables). `spread`: each item's metal varies
    /// from its handbook figure (`mech.mint_spread`), coins' within their alloys' tolerances, frauds' more.
    public static func measure(
        _ kind: CoinKind, truth: (diameter: Double, weight: Double, thickness: Double), measuredDiameterMM: Double, measuredThicknessMM: Double?, number: Int,
        sensor settings: AlloySensorSettings, spread: Bool, rng: inout SplitMix64
    ) -> AlloySignature? {
        guard let construction = construction(of: kind, trueDiameter: truth.diameter, trueWeight: truth.weight, trueThickness: truth.thickness,
                                              rng: &rng) else { return nil }
        var variation = EddyCurrentSensor.Variation.none
        if spread, case .fraud = kind {
            variation = .init(conductivity: 1 + fraudConductivitySpread * rng.gaussian(), permeability: 1 + fraudPermeabilitySpread * rng.gaussian())
        } else if spread {
            variation = .init(conductivity: 1 + coinConductivitySpread * rng.gaussian(), permeability: 1 + coinPermeabilitySpread * rng.gaussian())
        }
        let clean = settings.sensor.signature(of: construction, diameterMM: truth.diameter, thicknessMM: truth.thickness, measuredDiameterMM: measuredDiameterMM,
                                              measuredThicknessMM: measuredThicknessMM, celsius: settings.celsius(at: number), variation: variation)
        let noise = settings.noise
        let low = clean.lowIACS * (1 + settings.lowBias) * (1 + noise * rng.gaussian())
        let high = clean.highIACS * (1 + settings.highBias) * (1 + noise * rng.gaussian())
        let permeability = clean.permeability * (1 + noise * rng.gaussian())
        return AlloySignature(lowIACS: max(0, low), highIACS: max(0, high), permeability: settings.measuresPermeability ? max(0.001, permeability) : nil)
    }
}
