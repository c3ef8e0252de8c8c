/// Upper-case hex, two digits a byte with no separators: how the adapter line spells bytes.
enum MDBHex {
    private static let digits = Array("0123456789ABCDEF".utf8)

    static func encode(_ bytes: [UInt8]) -> String {
        var text: [UInt8] = []
        text.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: text, as: UTF8.self)
    }

    /// The bytes `text` spells, or nil if it is not an even number of hex digits.
    static func decode(_ text: Substring.UTF8View) -> [UInt8]? {
        guard text.count % 2 == 0 else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.count / 2)
        var high: UInt8?
        for character in text {
            guard let nibble = value(character) else { return nil }
            if let first = high {
                bytes.append(first << 4 | nibble)
                high = nil
            } else {
                high = nibble
            }
        }
        return bytes
    }

    private static func value(_ character: UInt8) -> UInt8? {
        switch character {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): character - UInt8(ascii: "0")
        case UInt8(ascii: "A")...UInt8(ascii: "F"): character - UInt8(ascii: "A") + 10
        case UInt8(ascii: "a")...UInt8(ascii: "f"): character - UInt8(ascii: "a") + 10
        default: nil
        }
    }
}
