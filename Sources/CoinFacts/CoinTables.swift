/// The mint figures of the currencies CoinMech knows out of the box (see DESIGN "Coin facts").
///
/// Tolerances are recorded only where a mint or a statute publishes them; elsewhere a validator
/// assumes `MintTolerance.assumedRelative`.
public enum CoinTables {
    /// United States Mint, "Coin Specifications" (usmint.gov). Weight tolerances: 31 U.S.C.
    /// § 5113(a) — "The weight of the 5-cent coin may vary not more than 0.194 gram. The weight
    /// of the one-cent coin may vary not more than 0.13 gram." The dime's and quarter's are left
    /// to the Secretary of the Treasury and not recorded here (the assumed ±4 % is the ±0.091 g
    /// and ±0.227 g commonly quoted for them).
    public static let usd: [CoinSpec] = [
        CoinSpec(currency: "USD", code: "cent", valueMinor: 1, diameterMM: 19.05, weightG: 2.500, thicknessMM: 1.52,
                 tolerance: MintTolerance(weightG: 0.13)),
        CoinSpec(currency: "USD", code: "nickel", valueMinor: 5, diameterMM: 21.21, weightG: 5.000, thicknessMM: 1.95,
                 tolerance: MintTolerance(weightG: 0.194)),
        CoinSpec(currency: "USD", code: "dime", valueMinor: 10, diameterMM: 17.91, weightG: 2.268, thicknessMM: 1.35),
        CoinSpec(currency: "USD", code: "quarter", valueMinor: 25, diameterMM: 24.26, weightG: 5.670, thicknessMM: 1.75),
    ]

    /// Council Regulation (EC) No 975/98 as amended by No 423/1999 (diameters, weights);
    /// thicknesses as the ECB states them. The common technical specifications' tolerances are
    /// not published, so none is recorded.
    public static let eur: [CoinSpec] = [
        CoinSpec(currency: "EUR", code: "EUR_1c", valueMinor: 1, diameterMM: 16.25, weightG: 2.30, thicknessMM: 1.67),
        CoinSpec(currency: "EUR", code: "EUR_2c", valueMinor: 2, diameterMM: 18.75, weightG: 3.06, thicknessMM: 1.67),
        CoinSpec(currency: "EUR", code: "EUR_5c", valueMinor: 5, diameterMM: 21.25, weightG: 3.92, thicknessMM: 1.67),
        CoinSpec(currency: "EUR", code: "EUR_10c", valueMinor: 10, diameterMM: 19.75, weightG: 4.10, thicknessMM: 1.93),
        CoinSpec(currency: "EUR", code: "EUR_20c", valueMinor: 20, diameterMM: 22.25, weightG: 5.74, thicknessMM: 2.14),
        CoinSpec(currency: "EUR", code: "EUR_50c", valueMinor: 50, diameterMM: 24.25, weightG: 7.80, thicknessMM: 2.38),
        CoinSpec(currency: "EUR", code: "EUR_1", valueMinor: 100, diameterMM: 23.25, weightG: 7.50, thicknessMM: 2.33),
        CoinSpec(currency: "EUR", code: "EUR_2", valueMinor: 200, diameterMM: 25.75, weightG: 8.50, thicknessMM: 2.20),
    ]

    /// Current GBP coins; the £1 is the 12-sided coin of 2017. The Royal Mint's coin
    /// specifications (royalmint.com): thickness 20p 1.7 mm, 50p 1.78 mm, £1 2.8 mm, £2 2.5 mm.
    /// The 1p, 2p, 5p and 10p circulate in two compositions of different thickness (bronze or
    /// cupro-nickel, and plated steel since 1992 / 2012), so no single thickness is recorded.
    public static let gbp: [CoinSpec] = [
        CoinSpec(currency: "GBP", code: "GBP_1p", valueMinor: 1, diameterMM: 20.32, weightG: 3.56, thicknessMM: nil),
        CoinSpec(currency: "GBP", code: "GBP_2p", valueMinor: 2, diameterMM: 25.9, weightG: 7.12, thicknessMM: nil),
        CoinSpec(currency: "GBP", code: "GBP_5p", valueMinor: 5, diameterMM: 18.0, weightG: 3.25, thicknessMM: nil),
        CoinSpec(currency: "GBP", code: "GBP_10p", valueMinor: 10, diameterMM: 24.5, weightG: 6.5, thicknessMM: nil),
        CoinSpec(currency: "GBP", code: "GBP_20p", valueMinor: 20, diameterMM: 21.4, weightG: 5.0, thicknessMM: 1.7),
        CoinSpec(currency: "GBP", code: "GBP_50p", valueMinor: 50, diameterMM: 27.3, weightG: 8.0, thicknessMM: 1.78),
        CoinSpec(currency: "GBP", code: "GBP_1", valueMinor: 100, diameterMM: 23.43, weightG: 8.75, thicknessMM: 2.8),
        CoinSpec(currency: "GBP", code: "GBP_2", valueMinor: 200, diameterMM: 28.4, weightG: 12.0, thicknessMM: 2.5),
    ]

    /// The table of a currency code ("USD", "EUR", "GBP"), or nil.
    public static func table(for currency: String) -> [CoinSpec]? {
        switch currency.uppercased() {
        case "USD": usd
        case "EUR": eur
        case "GBP": gbp
        default: nil
        }
    }
}
