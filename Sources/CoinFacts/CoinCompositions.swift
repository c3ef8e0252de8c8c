/// What the mints say each coin is made of. A denomination may circulate in more than one
/// composition (the Royal Mint changed the 1p and 2p to plated steel in 1992 and the 5p and 10p
/// in 2011–2012 without changing their size or weight), so each has one or more variants.
///
/// Sources:
/// - United States Mint, "Coin Specifications" (usmint.gov): cent copper-plated zinc, 2.5 % Cu
///   and the rest zinc (the core 99.2 % Zn, 0.8 % Cu); 5¢ cupro-nickel 25 % Ni; dime and quarter
///   cupro-nickel 8.33 % Ni, the rest Cu — outer layers of 75/25 cupro-nickel bonded to a pure
///   copper core, so the cladding is 8.33 / 25 = 1/3 of the coin.
/// - European Central Bank, "Euro coins" (ecb.europa.eu) and Council Regulation (EU) No 729/2014:
///   1, 2 and 5 cent copper-covered steel; 10, 20 and 50 cent Nordic gold; €1 ring nickel brass,
///   centre three layers copper-nickel / nickel / copper-nickel; €2 ring copper-nickel, centre
///   three layers nickel brass / nickel / nickel brass.
/// - The Royal Mint, "UK coins" (royalmint.com): 1p and 2p bronze until 1992, copper-plated steel
///   since; 5p and 10p cupro-nickel until 2011/2012, nickel-plated steel since; 20p cupro-nickel
///   84/16; 50p cupro-nickel 75/25; £1 (2017) ring nickel brass, centre nickel-plated alloy; £2
///   ring nickel brass, centre cupro-nickel.
///
/// What the mints do not publish is assumed and said so here: the thickness of a plating (25 µm
/// on steel, of the order mints electroplate), the three layers of the €1 and €2 centres (equal
/// thirds), the centre's share of a two-metal coin's diameter (0.72, off the coins), and how a
/// denomination's variants share circulation (an estimate, for simulated populations only).
public enum CoinCompositions {
    /// One way a denomination is made.
    public struct Variant: Sendable, Hashable {
        /// "nickel-plated steel (since 2012)".
        public let name: String
        public let construction: CoinConstruction
        /// Its estimated share of the denomination's coins in circulation (a denomination's add to 1).
        public let share: Double

        public init(_ name: String, _ construction: CoinConstruction, share: Double = 1) {
            self.name = name
            self.construction = construction
            self.share = share
        }
    }

    /// Densities in g/cm³ (CRC Handbook): for platings given as a share of a coin's mass.
    public enum Density {
        public static let copper = 8.96
        public static let zinc = 7.14
        public static let nickel = 8.90
        public static let steel = 7.85
    }

    /// An electroplate assumed where the mint does not publish it, µm a face.
    public static let assumedPlatingMicrometres = 25.0
    /// The centre's share of a two-metal coin's diameter, where it is not published.
    public static let assumedCentreDiameter = 0.72

    /// A plating's thickness a face (µm) on a coin `thicknessMM` thick, from its share of the
    /// coin's mass and the densities.
    public static func platingMicrometres(massShare: Double, density: Double, coreDensity: Double, thicknessMM: Double) -> Double {
        let plating = massShare / density, core = (1 - massShare) / coreDensity
        return plating / (plating + core) / 2 * thicknessMM * 1000
    }

    /// The US cent's copper plating: 2.5 % of the coin is copper, 0.8 % of the core is.
    static let centPlatingMassShare = (0.025 - 0.008) / (1 - 0.008)

    static let plating = assumedPlatingMicrometres
    static let usd: [String: [Variant]] = [
        "cent": [Variant("copper-plated zinc", .plated(core: Materials.zinc, plating: [(Materials.copper, platingMicrometres(
            massShare: centPlatingMassShare, density: Density.copper, coreDensity: Density.zinc, thicknessMM: 1.52))]))],
        "nickel": [Variant("cupro-nickel 75/25", .solid(Materials.cuproNickel25))],
        "dime": [Variant("cupro-nickel clad copper", .clad(core: Materials.copper, cladding: Materials.cuproNickel25, faceFraction: 8.33 / 25 / 2))],
        "quarter": [Variant("cupro-nickel clad copper", .clad(core: Materials.copper, cladding: Materials.cuproNickel25, faceFraction: 8.33 / 25 / 2))],
    ]

    static func threeLayers(_ outer: Material, _ middle: Material) -> LayerStack {
        LayerStack([.init(outer, .fraction(1.0 / 3)), .init(middle, .fraction(1.0 / 3)), .init(outer, .rest)])
    }

    static let copperCoveredSteel = Variant("copper-covered steel", .plated(core: Materials.steel, plating: [(Materials.copper, plating)]))
    static let eur: [String: [Variant]] = [
        "EUR_1c": [copperCoveredSteel], "EUR_2c": [copperCoveredSteel], "EUR_5c": [copperCoveredSteel],
        "EUR_10c": [Variant("Nordic gold", .solid(Materials.nordicGold))],
        "EUR_20c": [Variant("Nordic gold", .solid(Materials.nordicGold))],
        "EUR_50c": [Variant("Nordic gold", .solid(Materials.nordicGold))],
        "EUR_1": [Variant("nickel brass ring, cupro-nickel / nickel / cupro-nickel centre", .bimetallic(
            ring: LayerStack([.init(Materials.nickelBrass, .rest)]), centre: threeLayers(Materials.cuproNickel25, Materials.nickel),
            centreDiameter: assumedCentreDiameter))],
        "EUR_2": [Variant("cupro-nickel ring, nickel brass / nickel / nickel brass centre", .bimetallic(
            ring: LayerStack([.init(Materials.cuproNickel25, .rest)]), centre: threeLayers(Materials.nickelBrass, Materials.nickel),
            centreDiameter: assumedCentreDiameter))],
    ]

    static let gbp: [String: [Variant]] = [
        "GBP_1p": [Variant("bronze (to 1992)", .solid(Materials.bronze), share: 0.3),
                   Variant("copper-plated steel (since 1992)", .plated(core: Materials.steel, plating: [(Materials.copper, plating)]), share: 0.7)],
        "GBP_2p": [Variant("bronze (to 1992)", .solid(Materials.bronze), share: 0.3),
                   Variant("copper-plated steel (since 1992)", .plated(core: Materials.steel, plating: [(Materials.copper, plating)]), share: 0.7)],
        "GBP_5p": [Variant("cupro-nickel (to 2011)", .solid(Materials.cuproNickel25), share: 0.3),
                   Variant("nickel-plated steel (since 2011)", .plated(core: Materials.steel, plating: [(Materials.nickel, plating)]), share: 0.7)],
        "GBP_10p": [Variant("cupro-nickel (to 2012)", .solid(Materials.cuproNickel25), share: 0.3),
                    Variant("nickel-plated steel (since 2012)", .plated(core: Materials.steel, plating: [(Materials.nickel, plating)]), share: 0.7)],
        "GBP_20p": [Variant("cupro-nickel 84/16", .solid(Materials.cuproNickel16))],
        "GBP_50p": [Variant("cupro-nickel 75/25", .solid(Materials.cuproNickel25))],
        "GBP_1": [Variant("nickel brass ring, nickel-plated centre", .bimetallic(
            ring: LayerStack([.init(Materials.nickelBrass, .rest)]),
            centre: LayerStack(CoinConstruction.platedLayers(core: Materials.nickelBrass, plating: [(Materials.nickel, plating)])),
            centreDiameter: assumedCentreDiameter))],
        "GBP_2": [Variant("nickel brass ring, cupro-nickel centre", .bimetallic(
            ring: LayerStack([.init(Materials.nickelBrass, .rest)]), centre: LayerStack([.init(Materials.cuproNickel25, .rest)]),
            centreDiameter: assumedCentreDiameter))],
    ]

    /// The variants of a coin of `CoinTables` or `WorldCoins`, or nil when no composition is recorded.
    public static func variants(of spec: CoinSpec) -> [Variant]? {
        switch spec.currency {
        case "USD": usd[spec.code]
        case "EUR": eur[spec.code]
        case "GBP": gbp[spec.code]
        default: WorldCoins.variants(of: spec)
        }
    }
}
