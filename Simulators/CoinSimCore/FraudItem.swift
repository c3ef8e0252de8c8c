import CoinFacts

/// Something made to pass for a coin it is not: a washer, a slug, a plated copy, a cheaper coin
/// shaved down. Each is made to the target coin's diameter and weight as its kind allows — a
/// washer also to its thickness (its hole makes the weight), a slug or a copy as thick as its
/// metal needs — so a validator of size and weight has little to go on; its metal gives it away.
public struct FraudItem: Sendable, Hashable, CustomStringConvertible {
    /// The classic frauds (docs/SIMULATOR.md, "Fraud").
    public enum Attack: String, Sendable, Hashable, CaseIterable {
        /// A steel washer of the coin's diameter and thickness, its hole making the weight.
        case steelWasher = "steel_washer"
        /// A brass disc of the coin's diameter and weight.
        case brassSlug = "brass_slug"
        /// A lead disc of the coin's diameter and weight.
        case leadSlug = "lead_slug"
        /// A counterfeit: a steel blank of the coin's diameter and weight, plated the coin's colour.
        case platedCopy = "plated_copy"
        /// A coin of less value shaved to a dearer coin's diameter (its edge, not its faces).
        case shaved
    }

    public let attack: Attack
    /// The coin it is made to pass for.
    public let target: CoinSpec
    /// Its nominal figures as made (before the maker's own spread).
    public let diameterMM: Double
    public let weightG: Double
    public let thicknessMM: Double
    public let construction: CoinConstruction

    public init(attack: Attack, target: CoinSpec, diameterMM: Double, weightG: Double, thicknessMM: Double, construction: CoinConstruction) {
        self.attack = attack
        self.target = target
        self.diameterMM = diameterMM
        self.weightG = weightG
        self.thicknessMM = thicknessMM
        self.construction = construction
    }

    /// "brass_slug:quarter".
    public var description: String { "\(attack.rawValue):\(target.code)" }

    /// Densities (g/cm³, CRC Handbook) of the metals frauds are made of.
    static let density: [String: Double] = [
        Materials.steel.name: 7.85, Materials.brass.name: 8.53, Materials.lead.name: 11.34,
    ]

    /// The thickness a coin has where its table records none (`InsertionGenerator` uses the same).
    public static let unrecordedThicknessMM = 1.8

    /// A steel washer sized to `target`: the target's diameter and thickness, its hole making
    /// the weight. A coin denser than steel (most copper alloys) outweighs a plain steel disc of
    /// its size: its washer is a disc without a hole, from sheet as thick as the weight needs.
    public static func washer(to target: CoinSpec) -> FraudItem {
        let diameter = target.diameterMM, coinThickness = target.thicknessMM ?? unrecordedThicknessMM
        let area = Double.pi * diameter * diameter / 400  // cm²
        let solid = 7.85 * area * coinThickness / 10
        let hole = (1 - min(1, target.weightG / solid)).squareRoot()
        let thickness = hole > 0.01 ? coinThickness : max(coinThickness, target.weightG / (7.85 * area) * 10)
        let construction: CoinConstruction = hole > 0.01
            ? .bimetallic(ring: LayerStack([.init(Materials.steel, .rest)]), centre: LayerStack([]), centreDiameter: hole)
            : .solid(Materials.steel)
        return FraudItem(attack: .steelWasher, target: target, diameterMM: diameter, weightG: target.weightG, thicknessMM: thickness,
                         construction: construction)
    }

    /// A slug of `metal` made to `target`'s size and weight: a solid disc of its diameter,
    /// punched from sheet as thick as its weight needs (lead's comes out much thinner than the
    /// coin, brass's somewhat; a coin whose thickness no table records cannot say so).
    public static func slug(_ attack: Attack, metal: Material, to target: CoinSpec) -> FraudItem {
        let area = Double.pi * target.diameterMM * target.diameterMM / 400  // cm²
        let thickness = target.weightG / ((density[metal.name] ?? 7.85) * area) * 10
        return FraudItem(attack: attack, target: target, diameterMM: target.diameterMM, weightG: target.weightG, thicknessMM: thickness,
                         construction: .solid(metal))
    }

    /// A steel copy of `target`: its diameter and weight (steel is denser than most coins, so it
    /// comes out thinner), plated 15 µm the colour of the coin's faces. Nil for a coin that is
    /// itself plated steel (a copy would be the coin).
    public static func platedCopy(of target: CoinSpec) -> FraudItem? {
        guard let variants = CoinCompositions.variants(of: target), let first = variants.first,
              !variants.contains(where: { Self.isPlatedSteel($0.construction) }) else { return nil }
        let steel = Materials.steel
        let thickness = target.weightG / (7.85 * Double.pi * target.diameterMM * target.diameterMM / 400) * 10
        func plated(like stack: LayerStack) -> LayerStack {
            LayerStack([.init(face(of: stack), .micrometres(15)), .init(steel, .rest), .init(face(of: stack), .micrometres(15))])
        }
        let construction: CoinConstruction
        switch first.construction {
        case .stack(let stack): construction = .stack(plated(like: stack))
        case .bimetallic(let ring, let centre, let centreDiameter):
            construction = .bimetallic(ring: plated(like: ring), centre: plated(like: centre), centreDiameter: centreDiameter)
        }
        return FraudItem(attack: .platedCopy, target: target, diameterMM: target.diameterMM, weightG: target.weightG, thicknessMM: thickness,
                         construction: construction)
    }

    /// The plating that looks like a stack's face: nickel for silver-coloured metals, nickel
    /// brass for golden ones, copper for copper.
    static func face(of stack: LayerStack) -> Material {
        let outer = stack.layers.first?.material ?? Materials.nickel
        switch outer {
        case Materials.copper, Materials.bronze, Materials.zinc: return Materials.copper
        case Materials.nordicGold, Materials.nickelBrass, Materials.aluminiumBronze, Materials.brass: return Materials.nickelBrass
        default: return Materials.nickel
        }
    }

    static func isPlatedSteel(_ construction: CoinConstruction) -> Bool {
        switch construction {
        case .stack(let stack): stack.layers.contains { $0.material == Materials.steel }
        case .bimetallic(let ring, let centre, _): (ring.layers + centre.layers).contains { $0.material == Materials.steel }
        }
    }

    /// The shave that pays in `currency`: a cheaper coin larger than a dearer one, its edge
    /// ground to the dearer one's diameter (USD: a cent to a dime, also sanded to its thickness,
    /// which takes its copper plating; EUR: a 50c to a €1; GBP: a 2p to a 10p). The shaved
    /// coin keeps its faces and its metal; it weighs what is left of it.
    public static func shaved(in currency: String) -> (source: CoinSpec, target: CoinSpec, thinned: Bool)? {
        func coin(_ currency: String, _ code: String) -> CoinSpec? { CoinTables.table(for: currency)?.first { $0.code == code } }
        switch currency.uppercased() {
        case "USD": return coin("USD", "cent").flatMap { source in coin("USD", "dime").map { (source, $0, true) } }
        case "EUR": return coin("EUR", "EUR_50c").flatMap { source in coin("EUR", "EUR_1").map { (source, $0, false) } }
        case "GBP": return coin("GBP", "GBP_2p").flatMap { source in coin("GBP", "GBP_10p").map { (source, $0, false) } }
        default: return nil
        }
    }

    /// The shaved coin of `currency` made from the source coin's variant `variant`.
    public static func shaved(in currency: String, variant: CoinCompositions.Variant) -> FraudItem? {
        guard let (source, target, thinned) = shaved(in: currency) else { return nil }
        let sourceThickness = source.thicknessMM ?? unrecordedThicknessMM
        let thickness = thinned ? (target.thicknessMM ?? sourceThickness) : sourceThickness
        let weight = source.weightG * (target.diameterMM / source.diameterMM) * (target.diameterMM / source.diameterMM) * thickness / sourceThickness
        var construction = variant.construction
        if thinned, case .stack(let stack) = construction, let core = stack.layers.first(where: { $0.thickness == .rest }) {
            // Sanding the faces takes a plating or a cladding with it: the core is what is left.
            construction = .solid(core.material)
        }
        return FraudItem(attack: .shaved, target: target, diameterMM: target.diameterMM, weightG: weight, thicknessMM: thickness,
                         construction: construction)
    }

    /// Every item of `attack` against `currency`'s coins, in table order: one sized to each coin
    /// (a copy of each that is not plated steel itself), or the shave from each of its source's
    /// compositions. The bench cycles through them; a scenario draws from them.
    public static func all(_ attack: Attack, currency: String) -> [FraudItem] {
        guard let table = CoinTables.table(for: currency) else { return [] }
        switch attack {
        case .steelWasher: return table.map(washer(to:))
        case .brassSlug: return table.map { slug(attack, metal: Materials.brass, to: $0) }
        case .leadSlug: return table.map { slug(attack, metal: Materials.lead, to: $0) }
        case .platedCopy: return table.compactMap(platedCopy(of:))
        case .shaved:
            guard let source = shaved(in: currency)?.source else { return [] }
            return (CoinCompositions.variants(of: source) ?? []).compactMap { shaved(in: currency, variant: $0) }
        }
    }

    /// One item of `attack` against `currency`'s coins, drawn with `rng`.
    public static func make(_ attack: Attack, currency: String, choosing rng: inout SplitMix64) -> FraudItem? {
        all(attack, currency: currency).randomElement(using: &rng)
    }
}
