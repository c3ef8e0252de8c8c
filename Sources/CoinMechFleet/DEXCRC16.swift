/// The CRC-16 of an EVA-DTS G85 record integrity check (EVA-DTS 6.2, 2.4.3): the generating
/// function x¹⁶ + x¹⁵ + x² + 1, taken as CRC-16/ARC does (polynomial 0x8005 reflected, 0xA001;
/// initial value 0; no final XOR), over every byte from the `S` of `ST` to the CR LF before
/// `G85`. Written as four upper-case hex digits, most significant byte first.
///
/// Which variant: the standard names the polynomial only. CRC-16/ARC's check value
/// (`123456789` → 0xBB3D) and a published DEX file whose G85 is its generator's own
/// (`DEXCRC16Tests`) fix the rest; CRC-16/MODBUS (initial 0xFFFF) does not match it.
public enum DEXCRC16 {
    public static func checksum(_ bytes: some Sequence<UInt8>) -> UInt16 {
        var crc: UInt16 = 0
        for byte in bytes {
            crc ^= UInt16(byte)
            for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ 0xA001 : crc >> 1 }
        }
        return crc
    }

    /// `G8501`: four hex digits, most significant byte first.
    public static func hex(_ crc: UInt16) -> String {
        let digits = String(crc, radix: 16, uppercase: true)
        return String(repeating: "0", count: 4 - digits.count) + digits
    }
}
