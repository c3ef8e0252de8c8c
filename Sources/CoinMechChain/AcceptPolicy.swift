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
    /// Values creditable per currency (packed code → sorted values).
    private let known: [UInt32: [Int64]]
    /// The largest value creditable in a currency without a table.
    public let maximumValueMinor: Int64

    public init(known: [String: Set<Int64>] = CirculatingValues.byCurrency, maximumValueMinor: Int64 = 10_000) {
        var packed: [UInt32: [Int64]] = [:]
        for (currency, values) in known { packed[Self.pack(Array(currency.utf8))] = values.sorted() }
        self.known = packed
        self.maximumValueMinor = maximumValueMinor
    }

    /// The checks as shipped: circulating values of USD, EUR and GBP, up to 100.00 elsewhere.
    public static let standard = AcceptPolicy()

    /// Whether `decision` (a well-formed ACCEPT) may be credited. Allocates nothing: it runs on
    /// every accept of the deciding path.
    @inline(__always)
    public func allows(_ decision: borrowing coinmech_decision) -> Bool {
        let key: UInt32? = withUnsafeBytes(of: decision.currency) { bytes in
            guard bytes[3] == 0 else { return nil }
            var key: UInt32 = 0
            for index in 0..<3 {
                guard bytes[index] >= UInt8(ascii: "A"), bytes[index] <= UInt8(ascii: "Z") else { return nil }
                key = key << 8 | UInt32(bytes[index])
            }
            return key
        }
        guard let key, ISO4217.active.contains(key) else { return false }
        let codeIsText = withUnsafeBytes(of: decision.code) { bytes -> Bool in
            for byte in bytes {
                if byte == 0 { return true }
                if byte < 0x20 || byte >= 0x7F { return false }
            }
            return false  // no NUL within the field
        }
        guard codeIsText else { return false }
        if let values = known[key] { return values.contains(decision.value_minor) }
        return decision.value_minor <= maximumValueMinor
    }

    /// Why `decision` may not be credited, for the rejection's message (only when `allows` said no).
    public func problem(_ decision: borrowing coinmech_decision) -> String {
        let currency = withUnsafeBytes(of: decision.currency) { Array($0) }
        let letters = currency[0...2].allSatisfy { $0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "Z") }
        guard currency[3] == 0, letters else { return "currency is not three capital letters" }
        let name = String(decoding: currency[0...2], as: UTF8.self)
        let key = Self.pack(Array(currency[0...2]))
        guard ISO4217.active.contains(key) else { return "currency '\(name)' is not an ISO 4217 code" }
        let code = withUnsafeBytes(of: decision.code) { Array($0) }
        guard let end = code.firstIndex(of: 0), code[..<end].allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) else {
            return "code is not printable ASCII ending within \(COINMECH_CODE_SIZE - 1) bytes"
        }
        if known[key] != nil { return "\(decision.value_minor) is not the value of a \(name) coin" }
        return "value \(decision.value_minor) is above the limit of \(maximumValueMinor) for \(name)"
    }

    static func pack(_ letters: [UInt8]) -> UInt32 {
        letters.prefix(3).reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
    }
}

/// Active ISO 4217 currency codes (ISO 4217 list one, 2024), plus the test and precious-metal
/// codes an operator might see (XTS, XXX are not included: they name no money).
enum ISO4217 {
    static let active: Set<UInt32> = Set("""
        AED AFN ALL AMD ANG AOA ARS AUD AWG AZN BAM BBD BDT BGN BHD BIF BMD BND BOB BRL BSD BTN BWP BYN BZD CAD CDF CHF CLP CNY
        COP CRC CUP CVE CZK DJF DKK DOP DZD EGP ERN ETB EUR FJD FKP GBP GEL GHS GIP GMD GNF GTQ GYD HKD HNL HTG HUF IDR ILS INR
        IQD IRR ISK JMD JOD JPY KES KGS KHR KMF KPW KRW KWD KYD KZT LAK LBP LKR LRD LSL LYD MAD MDL MGA MKD MMK MNT MOP MRU MUR
        MVR MWK MXN MYR MZN NAD NGN NIO NOK NPR NZD OMR PAB PEN PGK PHP PKR PLN PYG QAR RON RSD RUB RWF SAR SBD SCR SDG SEK SGD
        SHP SLE SOS SRD SSP STN SVC SYP SZL THB TJS TMT TND TOP TRY TTD TWD TZS UAH UGX USD UYU UZS VED VES VND VUV WST XAF XCD
        XCG XOF XPF YER ZAR ZMW ZWG
        """.split(whereSeparator: { $0 == " " || $0 == "\n" }).map { AcceptPolicy.pack(Array($0.utf8)) })
}
