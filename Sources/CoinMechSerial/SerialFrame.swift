/// One sentence of the raw-sensor mech's line protocol (NMEA style, ASCII, XOR checksum):
///
///     $CMR,<devseq>,<diameter_mm>,<weight_g>[,<thickness_mm>]*HH\r\n   mech → host: a reading
///     $CMD,<devseq>,A*HH\r\n  /  $CMD,<devseq>,R*HH\r\n               host → mech: accept / return
///     $CMS,<status>[,<detail>]*HH\r\n                                   mech → host: status
///     $CMI,1*HH\r\n  /  $CMI,0*HH\r\n                                   host → mech: inhibit on / off
public enum SerialFrame: Sendable, Hashable {
    case reading(deviceSeq: UInt64, diameterMM: Double, weightG: Double, thicknessMM: Double?)
    case decision(deviceSeq: UInt64, accept: Bool)
    case status(MechStatus, detail: String?)
    case inhibit(Bool)

    /// The longest sentence either side may send, `$` to `\n` inclusive.
    public static let maximumLength = 96

    /// The sentence with checksum and CR LF.
    public var encoded: String {
        let body: String
        switch self {
        case .reading(let seq, let diameter, let weight, let thickness):
            body = "CMR,\(seq),\(Self.number(diameter)),\(Self.number(weight))" + (thickness.map { ",\(Self.number($0))" } ?? "")
        case .decision(let seq, let accept):
            body = "CMD,\(seq),\(accept ? "A" : "R")"
        case .status(let status, let detail):
            body = "CMS,\(status.rawValue)" + (detail.map { ",\($0)" } ?? "")
        case .inhibit(let on):
            body = "CMI,\(on ? 1 : 0)"
        }
        return "$\(body)*\(Self.hex(Self.checksum(body.utf8)))\r\n"
    }

    public var bytes: [UInt8] { Array(encoded.utf8) }

    /// XOR of every byte between `$` and `*`.
    public static func checksum(_ body: some Sequence<UInt8>) -> UInt8 { body.reduce(0, ^) }

    static func hex(_ byte: UInt8) -> String {
        let digits = Array("0123456789ABCDEF")
        return String([digits[Int(byte >> 4)], digits[Int(byte & 0xF)]])
    }

    /// Three decimals, no exponent: what a mech's firmware prints.
    static func number(_ value: Double) -> String {
        guard value.isFinite else { return value.isNaN ? "nan" : (value > 0 ? "inf" : "-inf") }
        let thousandths = (value * 1000).rounded()
        let sign = thousandths < 0 ? "-" : ""
        let magnitude = Int64(abs(thousandths))
        let fraction = String(magnitude % 1000)
        return "\(sign)\(magnitude / 1000).\(String(repeating: "0", count: 3 - fraction.count))\(fraction)"
    }
}

/// What a `$CMS` sentence reports.
public enum MechStatus: String, Sendable, Hashable, CaseIterable {
    /// The mech (re)started; its device sequence numbers start again at 1.
    case powerUp = "POWERUP"
    case ok = "OK"
    case jam = "JAM"
    case tamper = "TAMPER"
}
