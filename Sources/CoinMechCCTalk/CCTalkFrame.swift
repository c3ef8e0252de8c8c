/// One ccTalk message: `[destination][data length][source][header][data × n][checksum]`.
///
/// On a CRC-16 line the source slot carries the CRC's low byte, so a frame read from such a line
/// has no source address (`source` is nil) and the last byte is the CRC's high byte.
public struct CCTalkFrame: Sendable, Hashable, CustomStringConvertible {
    public var destination: UInt8
    /// The sender's address; nil on a CRC-16 line, where its slot carries the CRC.
    public var source: UInt8?
    public var header: UInt8
    public var data: [UInt8]

    /// A frame carries at most 255 data bytes (the length is one byte).
    public static let maximumData = 255
    /// Destination, length, source, header and checksum around the data.
    public static let overhead = 5
    /// The host's usual address, and a coin acceptor's.
    public static let hostAddress: UInt8 = 1
    public static let coinAcceptorAddress: UInt8 = 2
    /// A message to every device on the bus.
    public static let broadcastAddress: UInt8 = 0

    public init(destination: UInt8, source: UInt8?, header: UInt8, data: [UInt8] = []) {
        precondition(data.count <= Self.maximumData, "a ccTalk frame carries at most 255 data bytes")
        self.destination = destination
        self.source = source
        self.header = header
        self.data = data
    }

    /// The bytes on the wire, protected as `checksum` says. A simple-checksum frame needs a
    /// source address (0 is sent when there is none).
    public func encoded(_ checksum: CCTalkChecksum) -> [UInt8] {
        var bytes = [destination, UInt8(data.count), source ?? 0, header] + data
        switch checksum {
        case .simple:
            bytes.append(CCTalkChecksum.simple(bytes))
        case .crc16:
            let crc = CCTalkChecksum.crc16([destination, UInt8(data.count), header] + data)
            bytes[2] = UInt8(crc & 0xFF)
            bytes.append(UInt8(crc >> 8))
        }
        return bytes
    }

    /// How long a frame with `count` data bytes is on the wire, in bytes.
    public static func length(dataCount count: Int) -> Int { count + overhead }

    /// Reads one complete frame (exactly its bytes); nil if the length byte does not match the
    /// byte count or the checksum is wrong.
    public static func decode(_ bytes: some Collection<UInt8>, checksum: CCTalkChecksum) -> CCTalkFrame? {
        let bytes = Array(bytes)
        guard bytes.count >= overhead, Int(bytes[1]) + overhead == bytes.count else { return nil }
        let data = Array(bytes[4..<(bytes.count - 1)])
        switch checksum {
        case .simple:
            guard bytes.reduce(0, &+) == 0 else { return nil }
            return CCTalkFrame(destination: bytes[0], source: bytes[2], header: bytes[3], data: data)
        case .crc16:
            let crc = CCTalkChecksum.crc16([bytes[0], bytes[1], bytes[3]] + data)
            guard UInt8(crc & 0xFF) == bytes[2], UInt8(crc >> 8) == bytes[bytes.count - 1] else { return nil }
            return CCTalkFrame(destination: bytes[0], source: nil, header: bytes[3], data: data)
        }
    }

    public var description: String {
        let from = source.map { "\($0)" } ?? "?"
        let name = CCTalkHeader(rawValue: header).map { " (\($0.name))" } ?? ""
        return "\(from) → \(destination) header \(header)\(name) data [\(Self.hex(data))]"
    }

    /// Bytes as upper-case hex pairs separated by spaces, as the specification prints frames.
    public static func hex(_ bytes: some Sequence<UInt8>) -> String {
        let digits = Array("0123456789ABCDEF")
        return bytes.map { String([digits[Int($0 >> 4)], digits[Int($0 & 0xF)]]) }.joined(separator: " ")
    }

    /// Parses "02 00 01 FE FF" (spaces optional); nil on anything but hex pairs.
    public static func bytes(hex text: String) -> [UInt8]? {
        let digits = Array(text.filter { !$0.isWhitespace })
        guard digits.count % 2 == 0 else { return nil }
        var bytes: [UInt8] = []
        for index in stride(from: 0, to: digits.count, by: 2) {
            guard let byte = UInt8(String(digits[index...index + 1]), radix: 16) else { return nil }
            bytes.append(byte)
        }
        return bytes
    }
}
