/// What a changer says of itself in reply to SETUP (09h): 7 fixed bytes, then one credit byte
/// per coin type it reports (up to 16; real changers send fewer, and unsent types are 0).
public struct MDBChangerSetup: Sendable, Hashable {
    /// 2 or 3: level 3 adds the EXPANSION commands.
    public var level: UInt8
    /// The country or currency code as sent, packed BCD: leading digit 1, an ISO 4217 number
    /// (0x1978 is 978, the euro); leading digit 0, a telephone country code (0x0001: USA).
    public var countryCode: UInt16
    /// Every coin value is this many of the currency's smallest units times its credit byte.
    public var scalingFactor: UInt8
    /// Decimal places of the currency's display (2 for cents).
    public var decimalPlaces: UInt8
    /// Bit n: coins of type n can be routed to a tube (and so paid out).
    public var tubeRouting: UInt16
    /// Per coin type, its value in scaled units: 0 unused, FFh a vend token.
    public var credits: [UInt8]

    public static let fixedLength = 7
    public static let maximumLength = fixedLength + 16

    public init(reply bytes: [UInt8]) throws(MDBReplyError) {
        guard bytes.count >= Self.fixedLength else { throw .tooShort(reply: "SETUP", bytes: bytes.count, needed: Self.fixedLength) }
        guard bytes.count <= Self.maximumLength else { throw .tooLong(reply: "SETUP", bytes: bytes.count, maximum: Self.maximumLength) }
        guard bytes[0] == 2 || bytes[0] == 3 else { throw .badField(reply: "SETUP", field: "feature level", value: "\(bytes[0])") }
        guard bytes[3] > 0 else { throw .badField(reply: "SETUP", field: "scaling factor", value: "0") }
        level = bytes[0]
        countryCode = UInt16(bytes[1]) << 8 | UInt16(bytes[2])
        scalingFactor = bytes[3]
        decimalPlaces = bytes[4]
        tubeRouting = UInt16(bytes[5]) << 8 | UInt16(bytes[6])
        credits = Array(bytes[Self.fixedLength...])
    }

    /// The ISO 4217 number the code names (978 for the euro), or nil for a telephone code.
    public var iso4217Number: Int? {
        let digits = [countryCode >> 12, countryCode >> 8 & 0xF, countryCode >> 4 & 0xF, countryCode & 0xF]
        guard digits[0] == 1, digits.dropFirst().allSatisfy({ $0 <= 9 }) else { return nil }
        return Int(digits[1] * 100 + digits[2] * 10 + digits[3])
    }

    /// The value of a coin of `type` in the currency's smallest unit, or nil for a type the
    /// changer does not use (credit 0) or a vend token (FFh).
    public func valueMinor(ofType type: Int) -> Int64? {
        guard credits.indices.contains(type), credits[type] != 0, credits[type] != 0xFF else { return nil }
        return Int64(credits[type]) * Int64(scalingFactor)
    }

    /// Whether coins of `type` can go to a tube.
    public func routesToTube(_ type: Int) -> Bool { (0...15).contains(type) && tubeRouting & (1 << type) != 0 }
}
