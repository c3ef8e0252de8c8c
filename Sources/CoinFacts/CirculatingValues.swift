/// The face values of the coins each known currency circulates, in minor units: what a host
/// may credit for that currency without further configuration. Wider than the measured tables
/// (a US half dollar or dollar coin has a value here, not a row in `CoinTables`).
///
/// Sources: US Mint, "Circulating Coins" (cent, nickel, dime, quarter, half dollar, dollar);
/// European Central Bank, "Euro coins" (1 cent to 2 euro); Royal Mint, "UK coins" (1p to £2).
public enum CirculatingValues {
    public static let byCurrency: [String: Set<Int64>] = [
        "USD": [1, 5, 10, 25, 50, 100],
        "EUR": [1, 2, 5, 10, 20, 50, 100, 200],
        "GBP": [1, 2, 5, 10, 20, 50, 100, 200],
    ]
}
