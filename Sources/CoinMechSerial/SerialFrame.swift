import CoinMechModel

/// One sentence of the raw-sensor mech's line protocol (NMEA style, ASCII, XOR checksum;
/// docs/HARDWARE.md has the whole exchange):
///
///     $CMR,<devseq>,<diameter_mm>,<weight_g>[,<thickness_mm>[,<mech_ms>       mech → host: a reading, with
///          [,<conductivity_low>,<conductivity_high>[,<permeability>]]]]*HH     the alloy axis if it measures it
///     $CMD,<devseq>,A*HH  /  $CMD,<devseq>,R*HH                           host → mech: accept / return
///     $CMC,<devseq>,S*HH  /  $CMC,<devseq>,R*HH                           mech → host: the accepted coin
///                                                                          was stored / came back after all
///     $CMQ,<boot>,<devseq>*HH                                              host → mech: what became of it?
///     $CMJ,<boot>,<devseq>,S|R|U*HH                                        mech → host: its journal's answer
///     $CMH*HH                                                              host → mech: hello (on connect)
///     $CMS,<status>[,<detail>]*HH                                          mech → host: status; POWERUP and
///                                                                          SESSION carry the mech's boot number,
///                                                                          ALLOY its sensor's frequencies
///     $CMI,1*HH  /  $CMI,0*HH                                              host → mech: inhibit on / off
///
/// Every sentence ends with CR LF.
public enum SerialFrame: Sendable, Hashable {
    case reading(SensorReading)
    case decision(deviceSeq: UInt64, accept: Bool)
    /// What became of an accepted coin: `stored` or `returned` (never `unknown` here).
    case confirmation(deviceSeq: UInt64, fate: CoinFate)
    case query(boot: UInt64, deviceSeq: UInt64)
    case journal(boot: UInt64, deviceSeq: UInt64, fate: CoinFate)
    case hello
    case status(MechStatus, detail: String?)
    case inhibit(Bool)

    /// The longest sentence either side may send, `$` to `\n` inclusive.
    public static let maximumLength = 96

    /// The sentence with checksum and CR LF.
    public var encoded: String {
        let body: String
        switch self {
        case .reading(let reading):
            var fields = ["CMR", "\(reading.deviceSeq)", Self.number(reading.diameterMM), Self.number(reading.weightG)]
            let alloy = reading.alloy
            if reading.thicknessMM != nil || reading.mechMilliseconds != nil || alloy != nil { fields.append(reading.thicknessMM.map(Self.number) ?? "") }
            if reading.mechMilliseconds != nil || alloy != nil { fields.append(reading.mechMilliseconds.map { "\($0)" } ?? "") }
            if let alloy {
                fields += [Self.number(alloy.lowIACS), Self.number(alloy.highIACS)]
                if let permeability = alloy.permeability { fields.append(Self.number(permeability)) }
            }
            body = fields.joined(separator: ",")
        case .decision(let seq, let accept):
            body = "CMD,\(seq),\(accept ? "A" : "R")"
        case .confirmation(let seq, let fate):
            body = "CMC,\(seq),\(fate.rawValue)"
        case .query(let boot, let seq):
            body = "CMQ,\(boot),\(seq)"
        case .journal(let boot, let seq, let fate):
            body = "CMJ,\(boot),\(seq),\(fate.rawValue)"
        case .hello:
            body = "CMH"
        case .status(let status, let detail):
            body = "CMS,\(status.rawValue)" + (detail.map { ",\($0)" } ?? "")
        case .inhibit(let on):
            body = "CMI,\(on ? 1 : 0)"
        }
        return "$\(body)*\(Self.hex(Self.checksum(body.utf8)))\r\n"
    }

    public var bytes: [UInt8] { Array(encoded.utf8) }

    /// The bytes of an answer (`$CMD`) besides the coin's number: what its time on the line
    /// depends on (`LineTiming`).
    public static let decisionFraming = decision(deviceSeq: 0, accept: true).bytes.count - 1

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

/// A `$CMR` reading as the mech sent it.
public struct SensorReading: Sendable, Hashable {
    public var deviceSeq: UInt64
    public var diameterMM: Double
    public var weightG: Double
    public var thicknessMM: Double?
    /// The mech's own millisecond clock when it sent the reading (its deadline starts then):
    /// lets the host tell a reading that waited in a buffer from one that just arrived.
    public var mechMilliseconds: UInt64?
    /// The alloy axis, from a mech with an eddy-current sensor.
    public var alloy: AlloySignature?
    /// Alloy fields that were sent but cannot be measurements (the reading stands; the host
    /// returns the coin with the fault's reason).
    public var alloyFault: AlloyFault?

    public init(deviceSeq: UInt64, diameterMM: Double, weightG: Double, thicknessMM: Double? = nil, mechMilliseconds: UInt64? = nil,
                alloy: AlloySignature? = nil, alloyFault: AlloyFault? = nil) {
        self.deviceSeq = deviceSeq
        self.diameterMM = diameterMM
        self.weightG = weightG
        self.thicknessMM = thicknessMM
        self.mechMilliseconds = mechMilliseconds
        self.alloy = alloy
        self.alloyFault = alloyFault
    }
}

