import CoinFacts
import CoinMechSettings

/// `source.currencies` and `source.tokens`: the coins this cabinet takes, which every accept a
/// plugin returns is checked against (docs/CONFIG.md, docs/PLUGINS.md).
enum CabinetCoinsSettings {
    /// The cabinet's coins, and whether the currencies were configured (a cabinet that names
    /// none takes its tokens here, and the currencies its chain's links declare: fail closed).
    static func parse(_ source: SettingsTable) throws(SettingsError) -> (coins: CabinetCoins, configured: Bool) {
        let currencies = try source.strings("currencies")
        if let currencies {
            guard !currencies.isEmpty else { throw source.error("currencies", "must name at least one currency, e.g. [USD]") }
            for currency in currencies where !isCurrencyCode(currency) {
                throw source.error("currencies", "'\(currency)' is not a currency code (three capital letters, e.g. USD)")
            }
        }
        var tokens: [Denomination] = []
        for token in try source.tables("tokens") ?? [] {
            try token.rejectUnknownKeys(["code", "value", "currency"])
            guard let code = try token.string("code"), (1...31).contains(code.utf8.count),
                  code.utf8.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) else {
                throw token.error("code", "is required: 1 to 31 printable ASCII characters, as the plugin that accepts the token names it")
            }
            guard let value = try token.int("value"), value >= 1 else {
                throw token.error("value", "is required: what the token is worth in minor units of its currency (at least 1)")
            }
            guard let currency = try token.string("currency") ?? currencies?.first else {
                throw token.error("currency", "is required when source.currencies is not set")
            }
            guard isCurrencyCode(currency) else { throw token.error("currency", "'\(currency)' is not a currency code (three capital letters)") }
            if let currencies, !currencies.contains(currency) {
                throw token.error("currency", "\(currency) is not one of source.currencies (\(currencies.joined(separator: ", ")))")
            }
            tokens.append(Denomination(currency: currency, code: code, valueMinor: Int64(value)))
        }
        guard let currencies else { return (CabinetCoins(coins: tokens), false) }
        var coins: [Denomination] = []
        for currency in currencies {
            if let minted = CabinetCoins.mint(currency) {
                coins += minted
            } else if !tokens.contains(where: { $0.currency == currency }) {
                throw source.error("currencies", "CoinMech has no coin figures for \(currency) (it has \(CabinetCoins.mintCurrencies.joined(separator: ", "))): declare the coins this cabinet takes in it under source.tokens")
            }
        }
        return (CabinetCoins(coins: coins + tokens), true)
    }

    static func isCurrencyCode(_ text: String) -> Bool {
        text.utf8.count == 3 && text.utf8.allSatisfy { $0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "Z") }
    }
}
