import CoinFacts
import CoinMechPluginABI

/// What the host checks in every accept a plugin returns, before it can become credit. A
/// plugin is code the operator may not have written: an accept of 10^15 in a currency that does
/// not exist, or with a code that is not text, is a `plugin_error` naming the link, and the
/// coin is returned.
///
/// - currency: an active ISO 4217 code;
/// - code: printable ASCII, NUL-terminated within its field;
/// - value: a circulating coin's value for the currencies the host knows (USD, EUR, GBP), and
///   for others at most `maximumValueMinor`.
public struct AcceptPolicy: Sendable, Equatable {
    /// A decision's code field as C declares it.
    public typealias CodeField = (CChar, CChar, CChar, CChar, CChar, CChar, CChar, CChar, CChar, CChar, CChar, CChar, CChar, CChar, CChar, CChar,
                                  CChar, CChar, CChar, CChar, CChar, CChar, CChar, CChar, CChar, CChar, CChar, CChar, CChar, CChar, CChar, CChar)

    public static func == (a: AcceptPolicy, b: AcceptPolicy) -> Bool {
        a.knownKeys == b.knownKeys && a.knownValues == b.knownValues && a.maximumValueMinor == b.maximumValueMinor
    }

    /// Values creditable per currency: packed codes, and each one's sorted values. A few
    /// currencies, searched in turn: no hashing on the deciding path.
    private let knownKeys: [UInt32]
    private let knownValues: [[Int64]]
    /// The same values below 256 as bits.
    private let knownValueBits: [(UInt64, UInt64, UInt64, UInt64)]
    /// The largest value creditable in a currency without a table.
    public let maximumValueMinor: Int64

    public init(known: [String: Set<Int64>] = CirculatingValues.byCurrency, maximumValueMinor: Int64 = 10_000) {
        let sorted = known.sorted { $0.key < $1.key }
        knownKeys = sorted.map { Self.pack(Array($0.key.utf8)) }
        knownValues = sorted.map { $0.value.sorted() }
        knownValueBits = sorted.map { entry in
            var bits: [UInt64] = [0, 0, 0, 0]
            for value in entry.value where value >= 0 && value < 256 { bits[Int(value >> 6)] |= 1 << UInt64(value & 63) }
            return (bits[0], bits[1], bits[2], bits[3])
        }
        self.maximumValueMinor = maximumValueMinor
    }

    /// The checks as shipped: circulating values of USD, EUR and GBP, up to 100.00 elsewhere.
    public static let standard = AcceptPolicy()

    /// Whether `decision` (a well-formed ACCEPT) may be credited. Allocates nothing and hashes
    /// nothing: it runs on every accept of the deciding path (a word at a time, it costs about a
    /// tenth of what a byte loop, a `Set` and a `Dictionary` cost).
    @inline(__always)
    public func allows(_ decision: borrowing coinmech_decision) -> Bool {
        // Three capital letters and a NUL, as one little-endian word: byte 0 is the first letter.
        let currency = withUnsafeBytes(of: decision.currency) { $0.loadUnaligned(as: UInt32.self) }
        let first = currency & 0xFF, second = currency >> 8 & 0xFF, third = currency >> 16 & 0xFF
        // A byte below "A" wraps round to a large number.
        guard currency >> 24 == 0, first &- 65 < 26, second &- 65 < 26, third &- 65 < 26 else { return false }
        let key = first << 16 | second << 8 | third
        guard ISO4217.isActive(key) else { return false }
        guard Self.isText(decision.code) else { return false }
        if let index = knownKeys.firstIndex(of: key) { return Self.contains(knownValueBits[index], knownValues[index], decision.value_minor) }
        return decision.value_minor <= maximumValueMinor
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

    /// Whether `value` is one of a currency's values: a bit in `bits` for values below 256.
    @inline(__always)
    private static func contains(_ bits: (UInt64, UInt64, UInt64, UInt64), _ values: [Int64], _ value: Int64) -> Bool {
        guard value >= 0 && value < 256 else { return values.contains(value) }
        let word: UInt64 = switch value >> 6 { case 0: bits.0; case 1: bits.1; case 2: bits.2; default: bits.3 }
        return word >> UInt64(value & 63) & 1 == 1
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
        if knownKeys.contains(key) { return "\(decision.value_minor) is not the value of a \(name) coin" }
        return "value \(decision.value_minor) is above the limit of \(maximumValueMinor) for \(name)"
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
