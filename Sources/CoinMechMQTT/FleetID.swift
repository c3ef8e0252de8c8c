/// A cabinet id or a site (docs/FLEET.md, "Words"): 1 to 64 of `a-z 0-9 _ -`, starting with a
/// letter or a digit. Each is a whole topic level, so it never holds `/`, `+` or `#`, and it is
/// safe as a PostgreSQL value, a broker user name and a word in a log line. The bridge refuses
/// any other at start; the fleet refuses a topic that names one.
public enum FleetID {
    /// The rule once, over contiguous bytes: a caller's `String` or `Substring` hands its
    /// storage over in one call (the fleet reads two of these per message, and a generic walk
    /// of the view, unspecialized across modules, cost it a twentieth of its time).
    public static func isValid(_ text: some StringProtocol) -> Bool {
        text.utf8.withContiguousStorageIfAvailable(isValid(bytes:)) ?? Array(text.utf8).withUnsafeBufferPointer(isValid(bytes:))
    }

    private static func isValid(bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        guard (1...64).contains(bytes.count), letterOrDigit(bytes[0]) else { return false }
        return bytes.allSatisfy { letterOrDigit($0) || $0 == UInt8(ascii: "_") || $0 == UInt8(ascii: "-") }
    }

    private static func letterOrDigit(_ byte: UInt8) -> Bool { (0x61...0x7A).contains(byte) || (0x30...0x39).contains(byte) }
}
