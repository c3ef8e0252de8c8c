import CoinFacts
import CoinMechPluginABI

#if canImport(Glibc)
import Glibc
#endif

/// What the host checks in every accept a plugin returns, before it can become credit. A
/// plugin is code the operator may not have written:
///
/// - malformed (`plugin_error`): a currency that is not an active ISO 4217 code, a code that
///   is not printable ASCII ending within its field;
/// - a lie (`plugin_lie`): well formed, but not one of the cabinet's coins (`CabinetCoins`:
///   the configured currencies' mint coins and the declared tokens), with its currency, code
///   and value together. "dime" at 100 cents, or "EUR_2" in a USD cabinet, is a lie.
///
/// Either way the coin is returned and the link named.
public struct AcceptPolicy: Sendable, Equatable {
    /// A decision's code field as C declares it.
    public typealias CodeField = (CChar, CChar, CChar, CChar, CChar, CChar, CChar, CChar, CChar, CChar, CChar, CChar, CChar, CChar, CChar, CChar,
                                  CChar, CChar, CChar, CChar, CChar, CChar, CChar, CChar, CChar, CChar, CChar, CChar, CChar, CChar, CChar, CChar)

    public static func == (a: AcceptPolicy, b: AcceptPolicy) -> Bool { a.coins == b.coins }

    /// What the policy was made from.
    public let coins: CabinetCoins
    /// The cabinet's currencies, packed; for each, its coins as (value, code bytes with their
    /// NUL). A few currencies and a few coins each, searched in turn: no hashing on the
    /// deciding path.
    private let currencyKeys: [UInt32]
    private let entries: [[(value: Int64, code: [UInt8])]]

    public init(coins: CabinetCoins) {
        self.coins = coins
        currencyKeys = coins.currencies.map { Self.pack(Array($0.utf8)) }
        entries = coins.currencies.map { currency in
            coins.coins.filter { $0.currency == currency }.map { (value: $0.valueMinor, code: Array($0.code.utf8) + [0]) }
        }
    }

    /// Every coin of USD, EUR and GBP, by its mint code: what tools check plugins against. (A
    /// cabinet with no configured currency takes what its chain's links declare instead.)
    public static let standard = AcceptPolicy(coins: .allMint)

    /// These coins and the mint coins of `currencies` (none for a currency without mint figures).
    public func adding(currencies: [String]) -> AcceptPolicy {
        AcceptPolicy(coins: CabinetCoins(coins: currencies.flatMap { CabinetCoins.mint($0) ?? [] } + coins.coins))
    }

    /// Whether `decision` (a well-formed ACCEPT) may be credited. Allocates nothing and hashes
    /// nothing: it runs on every accept of the deciding path.
    @inline(__always)
    public func allows(_ decision: borrowing coinmech_decision) -> Bool {
        guard let key = Self.wellFormedCurrency(decision), Self.isText(decision.code) else { return false }
        guard let index = currencyKeys.firstIndex(of: key) else { return false }
        let value = decision.value_minor, code = decision.code
        for entry in entries[index] where entry.value == value {
            if Self.codeEquals(code, entry.code) { return true }
        }
        return false
    }

    /// A well-formed accept outside the cabinet's coins: an active currency and a code that is
    /// text, but not a coin this cabinet takes (only when `allows` said no).
    public func isLie(_ decision: borrowing coinmech_decision) -> Bool {
        guard Self.wellFormedCurrency(decision) != nil else { return false }
        return Self.isText(decision.code)
    }

    /// The packed currency when it is three capital letters, a NUL and an active ISO 4217 code.
    @inline(__always)
    static func wellFormedCurrency(_ decision: borrowing coinmech_decision) -> UInt32? {
        // Three capital letters and a NUL, as one little-endian word: byte 0 is the first letter.
        let currency = withUnsafeBytes(of: decision.currency) { $0.loadUnaligned(as: UInt32.self) }
        let first = currency & 0xFF, second = currency >> 8 & 0xFF, third = currency >> 16 & 0xFF
        // A byte below "A" wraps round to a large number.
        guard currency >> 24 == 0, first &- 65 < 26, second &- 65 < 26, third &- 65 < 26 else { return nil }
        let key = first << 16 | second << 8 | third
        return ISO4217.isActive(key) ? key : nil
    }

    /// Whether the code field holds `code` (bytes with their NUL) at its start.
    @inline(__always)
    static func codeEquals(_ field: borrowing CodeField, _ code: [UInt8]) -> Bool {
        withUnsafeBytes(of: field) { bytes in
            code.withUnsafeBytes { expected in
                expected.count <= bytes.count && memcmp(bytes.baseAddress!, expected.baseAddress!, expected.count) == 0
            }
        }
    }

    /// Whether a code field is printable ASCII up to a NUL within it: the first byte that is not
    /// printable (below 0x20 or above 0x7E) must be that NUL. Eight bytes at a time: the lowest
    /// flagged byte of the classic "has a byte less than / more than" tests is exact.
    @inline(__always)
    static func isText(_ code: borrowing CodeField) -> Bool {
        withUnsafeBytes(of: code) { bytes in
            let ones: UInt64 = 0x0101_0101_0101_0101, highs: UInt64 = 0x8080_8080_8080_8080
            for offset in stride(from: 0, to: bytes.count, by: 8) {
                let word = bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
                let below = (word &- ones &* 0x20) & ~word & highs
                let above = ((word & ~highs) &+ ones &* (127 - 0x7E)) | word
                let flagged = (below | above & highs)
                if flagged != 0 {
                    let byte = flagged.trailingZeroBitCount / 8
                    return word >> UInt64(byte * 8) & 0xFF == 0
                }
            }
            return false  // no NUL within the field
        }
    }

    /// Why `decision` may not be credited, for the rejection's message (only when `allows` said no).
    public func problem(_ decision: borrowing coinmech_decision) -> String {
        let currency = withUnsafeBytes(of: decision.currency) { Array($0) }
        let letters = currency[0...2].allSatisfy { $0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "Z") }
        guard currency[3] == 0, letters else { return "currency is not three capital letters" }
        let name = String(decoding: currency[0...2], as: UTF8.self)
        let key = Self.pack(Array(currency[0...2]))
        guard ISO4217.isActive(key) else { return "currency '\(name)' is not an ISO 4217 code" }
        guard Self.isText(decision.code) else { return "code is not printable ASCII ending within \(COINMECH_CODE_SIZE - 1) bytes" }
        let code = coinmech_decision.string(decision.code)
        let value = decision.value_minor
        guard coins.currencies.contains(name) else {
            return "\(name) is not this cabinet's currency (\(coins.currencies.joined(separator: ", ")))"
        }
        let ofCurrency = coins.coins.filter { $0.currency == name }
        if let known = ofCurrency.first(where: { $0.code == code }) {
            return "'\(code)' is \(known.valueMinor) \(name) minor units, not \(value)"
        }
        if let worth = ofCurrency.first(where: { $0.valueMinor == value }) {
            return "'\(code)' is not a \(name) coin of this cabinet (\(value) is '\(worth.code)')"
        }
        return "'\(code)' at \(value) is not a \(name) coin of this cabinet"
    }

    static func pack(_ letters: [UInt8]) -> UInt32 {
        letters.prefix(3).reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
    }
}

/// Active ISO 4217 currency codes (ISO 4217 list one, 2024), plus the test and precious-metal
/// codes an operator might see (XTS, XXX are not included: they name no money).
enum ISO4217 {
    /// Whether a packed code (three capital letters, as `AcceptPolicy.pack` makes it) is active:
    /// one bit per possible code, 26³ of them, so no hashing on the deciding path.
    @inline(__always)
    static func isActive(_ key: UInt32) -> Bool {
        let bit = index(key)
        return activeBits[bit >> 6] >> UInt64(bit & 63) & 1 == 1
    }

    /// 0..<26³ for three capital letters.
    @inline(__always)
    static func index(_ key: UInt32) -> Int {
        Int((key >> 16 & 0xFF) - 65) * 676 + Int((key >> 8 & 0xFF) - 65) * 26 + Int((key & 0xFF) - 65)
    }

    static let activeBits: [UInt64] = {
        var bits = [UInt64](repeating: 0, count: (26 * 26 * 26 + 63) / 64)
        for key in active { bits[index(key) >> 6] |= 1 << UInt64(index(key) & 63) }
        return bits
    }()

    static let active: Set<UInt32> = Set("""
        AED AFN ALL AMD ANG AOA ARS AUD AWG AZN BAM BBD BDT BGN BHD BIF BMD BND BOB BRL BSD BTN BWP BYN BZD CAD CDF CHF CLP CNY
        COP CRC CUP CVE CZK DJF DKK DOP DZD EGP ERN ETB EUR FJD FKP GBP GEL GHS GIP GMD GNF GTQ GYD HKD HNL HTG HUF IDR ILS INR
        IQD IRR ISK JMD JOD JPY KES KGS KHR KMF KPW KRW KWD KYD KZT LAK LBP LKR LRD LSL LYD MAD MDL MGA MKD MMK MNT MOP MRU MUR
        MVR MWK MXN MYR MZN NAD NGN NIO NOK NPR NZD OMR PAB PEN PGK PHP PKR PLN PYG QAR RON RSD RUB RWF SAR SBD SCR SDG SEK SGD
        SHP SLE SOS SRD SSP STN SVC SYP SZL THB TJS TMT TND TOP TRY TTD TWD TZS UAH UGX USD UYU UZS VED VES VND VUV WST XAF XCD
        XCG XOF XPF YER ZAR ZMW ZWG
        """.split(whereSeparator: { $0 == " " || $0 == "\n" }).map { AcceptPolicy.pack(Array($0.utf8)) })
}
