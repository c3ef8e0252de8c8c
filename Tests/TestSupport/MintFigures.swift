/// Figures typed from the mints' published specifications, never taken from `CoinTables`:
/// (code, diameter mm, weight g, thickness mm or nil).
enum MintFigures {
    /// United States Mint, "Coin Specifications" (usmint.gov/learn/coins-and-medals/circulating-coins/coin-specifications).
    static let usd: [(String, Double, Double, Double?)] = [
        ("cent", 19.05, 2.500, 1.52), ("nickel", 21.21, 5.000, 1.95), ("dime", 17.91, 2.268, 1.35), ("quarter", 24.26, 5.670, 1.75),
    ]
    /// Council Regulation (EC) No 975/98 as amended by No 423/1999 (diameter, weight); thickness
    /// as the ECB's euro coin pages give it.
    static let eur: [(String, Double, Double, Double?)] = [
        ("EUR_1c", 16.25, 2.30, 1.67), ("EUR_2c", 18.75, 3.06, 1.67), ("EUR_5c", 21.25, 3.92, 1.67), ("EUR_10c", 19.75, 4.10, 1.93),
        ("EUR_20c", 22.25, 5.74, 2.14), ("EUR_50c", 24.25, 7.80, 2.38), ("EUR_1", 23.25, 7.50, 2.33), ("EUR_2", 25.75, 8.50, 2.20),
    ]
    /// The Royal Mint's specifications of the coins in circulation (royalmint.com); the 1p–10p
    /// circulate in two thicknesses (bronze or cupro-nickel, and plated steel).
    static let gbp: [(String, Double, Double, Double?)] = [
        ("GBP_1p", 20.32, 3.56, nil), ("GBP_2p", 25.9, 7.12, nil), ("GBP_5p", 18.0, 3.25, nil), ("GBP_10p", 24.5, 6.5, nil),
        ("GBP_20p", 21.4, 5.0, 1.7), ("GBP_50p", 27.3, 8.0, 1.78), ("GBP_1", 23.43, 8.75, 2.8), ("GBP_2", 28.4, 12.0, 2.5),
    ]
    /// 31 U.S.C. § 5113(a): "The weight of the 5-cent coin may vary not more than 0.194 gram. The
    /// weight of the one-cent coin may vary not more than 0.13 gram."
    static let usdWeightTolerance = ["nickel": 0.194, "cent": 0.13]

    static func of(_ currency: String) -> [(String, Double, Double, Double?)] {
        ["USD": usd, "EUR": eur, "GBP": gbp][currency]!
    }
}
