/// The coins a cabinet takes: what the host lets a plugin credit. A plugin's accept must name
/// one of them exactly (currency, code and value together), or it is a lie: the coin is
/// returned and the link is flagged (docs/PLUGINS.md).
///
/// Built from the mint figures of the configured currencies (`CoinTables`, plus the circulating
/// coins no table measures) and the tokens the operator declares.
public struct CabinetCoins: Sendable, Hashable {
    public let coins: [Denomination]
    /// The currencies, in the order first named.
    public let currencies: [String]

    public init(coins: [Denomination]) {
        var seen: Set<Denomination> = []
        self.coins = coins.filter { seen.insert($0).inserted }
        var currencies: [String] = []
        for coin in self.coins where !currencies.contains(coin.currency) { currencies.append(coin.currency) }
        self.currencies = currencies
    }

    /// The currencies whose coins CoinMech knows from the mints.
    public static let mintCurrencies = ["USD", "EUR", "GBP"]

    /// Circulating coins that `CoinTables` does not measure (no mech validates them by size out of
    /// the box, but a coin-id or channel-map link may be configured for them). US Mint,
    /// "Circulating Coins": the half dollar and the dollar coin.
    static let beyondTables: [Denomination] = [
        Denomination(currency: "USD", code: "half_dollar", valueMinor: 50),
        Denomination(currency: "USD", code: "dollar", valueMinor: 100),
    ]

    /// Every coin the mints circulate in `currency`, or nil when CoinMech has no figures for it.
    public static func mint(_ currency: String) -> [Denomination]? {
        guard let table = CoinTables.table(for: currency) else { return nil }
        return table.map { Denomination(currency: $0.currency, code: $0.code, valueMinor: $0.valueMinor) }
            + beyondTables.filter { $0.currency == currency }
    }

    /// The coins of `currencies` (each must have mint figures) and `tokens`.
    public static func of(currencies: [String], tokens: [Denomination] = []) -> CabinetCoins? {
        var coins: [Denomination] = []
        for currency in currencies {
            guard let minted = mint(currency) else { return nil }
            coins += minted
        }
        return CabinetCoins(coins: coins + tokens)
    }

    /// Every coin of the mint currencies: what a host with no configured currency takes.
    public static let allMint = CabinetCoins.of(currencies: mintCurrencies)!
}
