extension MDBChangerSetup {
    /// The ISO 4217 letters of the changer's currency, for the currencies whose coins
    /// changers are sold for; nil for a telephone country code or a number not listed.
    public var currencyCode: String? { iso4217Number.flatMap { Self.currencyLetters[$0] } }

    /// What the daemon calls a coin of `type` in its coin-id readings, built from what the
    /// changer says of it: the currency's letters and the value in its smallest unit ("USD25",
    /// "EUR200"); for a currency not listed, the country code in hex ("X1999-50"). Nil for a
    /// type the changer gives no value (unused, or a vend token). The chain's coin-id link maps
    /// these to denominations, as it maps a ccTalk acceptor's own ids.
    public func coinID(ofType type: Int) -> String? {
        guard let value = valueMinor(ofType: type) else { return nil }
        let prefix = currencyCode ?? "X\(String(countryCode, radix: 16, uppercase: true))-"
        return "\(prefix)\(value)"
    }

    /// Every coin type with a value, by type, with its coin id.
    public var coinIDs: [Int: String] {
        var ids: [Int: String] = [:]
        for type in 0..<16 { if let id = coinID(ofType: type) { ids[type] = id } }
        return ids
    }

    /// ISO 4217 numbers of currencies with coins, by their letters.
    static let currencyLetters: [Int: String] = [
        36: "AUD", 124: "CAD", 156: "CNY", 203: "CZK", 208: "DKK", 348: "HUF", 356: "INR", 392: "JPY", 410: "KRW",
        484: "MXN", 554: "NZD", 578: "NOK", 643: "RUB", 710: "ZAR", 752: "SEK", 756: "CHF", 826: "GBP", 840: "USD",
        946: "RON", 949: "TRY", 978: "EUR", 985: "PLN", 986: "BRL",
    ]
}
