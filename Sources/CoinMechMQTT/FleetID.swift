/// A cabinet id or a site (docs/FLEET.md, "Words"): 1 to 64 of `a-z 0-9 _ -`, starting with a
/// letter or a digit. Each is a whole topic level, so it never holds `/`, `+` or `#`, and it is
/// safe as a PostgreSQL value, a broker user name and a word in a log line. The bridge refuses
/// any other at start; the fleet refuses a topic that names one.
public enum FleetID {
    /// Over the bytes of a `String` (the fleet reads two of these per message): specialized,
    /// where the generic form below walks a type-erased view.
    public static func isValid(_ text: String) -> Bool {
        var text = text
        return text.withUTF8 { bytes in
            guard (1...64).contains(bytes.count), letterOrDigit(bytes[0]) else { return false }
            for byte in bytes where !(letterOrDigit(byte) || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-")) { return false }
            return true
        }
    }

    public static func isValid(_ text: some StringProtocol) -> Bool {
        guard (1...64).contains(text.utf8.count), let first = text.utf8.first, letterOrDigit(first) else { return false }
        return text.utf8.allSatisfy { letterOrDigit($0) || $0 == UInt8(ascii: "_") || $0 == UInt8(ascii: "-") }
    }

    private static func letterOrDigit(_ byte: UInt8) -> Bool { (0x61...0x7A).contains(byte) || (0x30...0x39).contains(byte) }
}
