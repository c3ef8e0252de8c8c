/// How a ccTalk frame is protected: the 8-bit checksum most coin acceptors use, or the
/// optional CRC-16 (ccTalk Generic Specification part 1, sections 7.10 and 7.11).
public enum CCTalkChecksum: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// The last byte makes every byte of the frame sum to 0 mod 256.
    case simple
    /// CRC-16/CCITT (polynomial 0x1021, initial value 0) over destination, length, header and
    /// data; its low byte travels in the source address slot, its high byte last.
    case crc16

    public var description: String { rawValue }

    /// The byte that makes `bytes` plus itself sum to 0 mod 256.
    public static func simple(_ bytes: some Sequence<UInt8>) -> UInt8 {
        0 &- bytes.reduce(0, &+)
    }

    /// CRC-16/CCITT with initial value 0 (also known as CRC-16/XMODEM), most significant bit first.
    public static func crc16(_ bytes: some Sequence<UInt8>) -> UInt16 {
        var crc: UInt16 = 0
        for byte in bytes {
            crc ^= UInt16(byte) << 8
            for _ in 0..<8 {
                crc = crc & 0x8000 != 0 ? (crc << 1) ^ 0x1021 : crc << 1
            }
        }
        return crc
    }
}
