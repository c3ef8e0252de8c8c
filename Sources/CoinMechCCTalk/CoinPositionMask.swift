/// Which of a coin acceptor's 16 coin positions a mask names; bit 0 is position 1. In the
/// inhibit registers (headers 231 and 230) a set bit means the position is enabled.
public struct CoinPositionMask: Sendable, Hashable, CustomStringConvertible {
    public var rawValue: UInt16

    public static let positions = 1...16
    public static let all = CoinPositionMask(rawValue: 0xFFFF)
    public static let none = CoinPositionMask(rawValue: 0)

    public init(rawValue: UInt16) { self.rawValue = rawValue }

    public init(positions: some Sequence<Int>) {
        rawValue = 0
        for position in positions { insert(position) }
    }

    /// The mask as it travels: positions 1–8, then 9–16.
    public init(bytes low: UInt8, _ high: UInt8) { rawValue = UInt16(low) | UInt16(high) << 8 }

    public var bytes: [UInt8] { [UInt8(rawValue & 0xFF), UInt8(rawValue >> 8)] }

    public func contains(_ position: Int) -> Bool {
        Self.positions.contains(position) && rawValue & (1 << (position - 1)) != 0
    }

    public mutating func insert(_ position: Int) {
        precondition(Self.positions.contains(position), "coin positions are 1 to 16")
        rawValue |= 1 << (position - 1)
    }

    public func intersection(_ other: CoinPositionMask) -> CoinPositionMask { CoinPositionMask(rawValue: rawValue & other.rawValue) }

    public var members: [Int] { Self.positions.filter(contains) }

    /// "1,2,5" or "none".
    public var description: String { members.isEmpty ? "none" : members.map(String.init).joined(separator: ",") }
}
