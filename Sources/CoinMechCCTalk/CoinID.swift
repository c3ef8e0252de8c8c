/// What a coin acceptor says a coin position holds (header 184): six ASCII characters
/// `CCVVVI` — a country code (`EU`, `GB`, `US`), a value code and an issue letter, e.g.
/// `EU200A` for the €2 coin, `GB005A` for 5p. An empty position reads `......`.
public struct CoinID: Sendable, Hashable, CustomStringConvertible {
    /// The characters as the device sent them (non-printable bytes shown as `?`).
    public let text: String

    public init(_ text: String) { self.text = text }

    /// Decodes the reply's bytes.
    public init(bytes: [UInt8]) {
        text = String(decoding: bytes.map { (0x20...0x7E).contains($0) ? $0 : UInt8(ascii: "?") }, as: UTF8.self)
    }

    /// The position holds no coin: `......`, blanks or zero bytes.
    public var isEmpty: Bool {
        text.isEmpty || text.allSatisfy { $0 == "." || $0 == " " || $0 == "?" }
    }

    /// `EU` in `EU200A`.
    public var country: String? { isEmpty || text.count != 6 ? nil : String(text.prefix(2)) }
    /// `200` in `EU200A`.
    public var valueCode: String? { isEmpty || text.count != 6 ? nil : String(text.dropFirst(2).prefix(3)) }
    /// `A` in `EU200A`: the coin's issue (a new design of the same value gets the next letter).
    public var issue: Character? { isEmpty || text.count != 6 ? nil : text.last }

    /// The value code read as a number of the currency's smallest unit, as the specification's
    /// coin tables write it (`EU200A` → 200, `GB005A` → 5): digits, where a `K` or `M` stands
    /// for the decimal point and multiplies by 1,000 or 1,000,000 (`1K0` → 1000, `2K5` → 2500).
    /// Nil for anything else. A nominal reading only: the configuration says what a position is.
    public var nominalValue: Int64? {
        guard let code = valueCode else { return nil }
        if let plain = Int64(code) { return plain }
        for (letter, factor) in [("K" as Character, 1_000.0), ("M", 1_000_000.0)] where code.contains(letter) {
            guard let value = Double(String(code.map { $0 == letter ? "." : $0 })) else { return nil }
            let scaled = value * factor
            return scaled == scaled.rounded() ? Int64(scaled) : nil
        }
        return nil
    }

    /// The id a coin table would give a coin of `valueMinor` in `currency` (ISO 4217: its
    /// first two letters are the country code, `EU` for the euro), issue `A`. Values must be
    /// 1 to 999.
    public static func standard(currency: String, valueMinor: Int64, issue: Character = "A") -> CoinID {
        precondition((1...999).contains(valueMinor), "a plain ccTalk value code holds 1 to 999")
        let digits = String(valueMinor)
        return CoinID("\(currency.prefix(2).uppercased())\(String(repeating: "0", count: 3 - digits.count))\(digits)\(issue)")
    }

    public static let empty = CoinID("......")

    public var description: String { text }
}
