/// Coins of currencies no cabinet here takes, known because they are close twins of one that
/// does: the classic foreign coins fed to coin machines. Never credited; a validator keeps them
/// to know what it must not take, and the simulator to feed them.
///
/// Sources:
/// - Royal Thai Mint (Treasury Department of Thailand), 10 baht of 1988– : 26.00 mm, 8.5 g,
///   2.15 mm; ring cupro-nickel 75/25, centre aluminium bronze Cu92Al6Ni2.
/// - Turkish State Mint (Darphane), 1 lira of 2009: 26.15 mm, 8.2 g, 1.9 mm; ring nickel brass,
///   centre cupro-nickel.
/// - Royal Canadian Mint, 25 cents since 2000: 23.88 mm, 4.4 g, 1.58 mm; multi-ply plated steel,
///   94 % steel, 3.8 % copper, 2.2 % nickel by mass (nickel, copper, nickel on the steel).
public enum WorldCoins {
    public static let thb10 = CoinSpec(currency: "THB", code: "THB_10", valueMinor: 1000, diameterMM: 26.00, weightG: 8.5, thicknessMM: 2.15)
    public static let try1 = CoinSpec(currency: "TRY", code: "TRY_1", valueMinor: 100, diameterMM: 26.15, weightG: 8.2, thicknessMM: 1.9)
    public static let cad25 = CoinSpec(currency: "CAD", code: "CAD_25c", valueMinor: 25, diameterMM: 23.88, weightG: 4.4, thicknessMM: 1.58)

    /// Every coin here.
    public static let all = [thb10, try1, cad25]

    /// The twins of each cabinet currency's coins that fraud is known to use: the 10 baht and the
    /// Turkish lira for the €2, the Canadian quarter for the US quarter; and coins of the other
    /// cabinet currencies that are twins of one of its own (GBP 20p and USD 5¢, GBP 10p and the US
    /// quarter).
    public static func twins(of currency: String) -> [CoinSpec] {
        switch currency.uppercased() {
        case "EUR": [thb10, try1]
        case "USD": [cad25, CoinTables.gbp.first { $0.code == "GBP_20p" }!, CoinTables.gbp.first { $0.code == "GBP_10p" }!]
        case "GBP": [CoinTables.usd.first { $0.code == "nickel" }!, CoinTables.usd.first { $0.code == "quarter" }!]
        default: []
        }
    }

    /// The Canadian quarter's platings a face, from its mass shares: half the nickel outside, the
    /// copper, the other half of the nickel on the steel.
    static let cadPlating: [(Material, Double)] = {
        func micrometres(_ share: Double, _ density: Double) -> Double {
            CoinCompositions.platingMicrometres(massShare: share, density: density, coreDensity: CoinCompositions.Density.steel, thicknessMM: 1.58)
        }
        let nickel = micrometres(0.022, CoinCompositions.Density.nickel) / 2
        return [(Materials.nickel, nickel), (Materials.copper, micrometres(0.038, CoinCompositions.Density.copper)), (Materials.nickel, nickel)]
    }()

    static func variants(of spec: CoinSpec) -> [CoinCompositions.Variant]? {
        switch spec.code {
        case thb10.code:
            [.init("cupro-nickel ring, aluminium bronze centre", .bimetallic(
                ring: LayerStack([.init(Materials.cuproNickel25, .rest)]), centre: LayerStack([.init(Materials.aluminiumBronze, .rest)]),
                centreDiameter: CoinCompositions.assumedCentreDiameter))]
        case try1.code:
            [.init("nickel brass ring, cupro-nickel centre", .bimetallic(
                ring: LayerStack([.init(Materials.nickelBrass, .rest)]), centre: LayerStack([.init(Materials.cuproNickel25, .rest)]),
                centreDiameter: CoinCompositions.assumedCentreDiameter))]
        case cad25.code:
            [.init("multi-ply plated steel", .plated(core: Materials.steel, plating: cadPlating))]
        default: nil
        }
    }
}
