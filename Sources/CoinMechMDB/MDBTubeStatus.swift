/// A changer's tubes, in reply to TUBE STATUS (0Ah): which are full, and per coin type the
/// greatest number of coins it knows for certain are in its tube (unsent types hold 0).
public struct MDBTubeStatus: Sendable, Hashable {
    /// Bit n: the tube of type n is full.
    public var full: UInt16
    /// Coins per type, 0 to 15.
    public var counts: [Int]
    /// How many types the reply counted (the rest are 0 because it did not say).
    public var reported: Int

    public static let maximumLength = 2 + 16

    public init(reply bytes: [UInt8]) throws(MDBReplyError) {
        guard bytes.count >= 2 else { throw .tooShort(reply: "TUBE STATUS", bytes: bytes.count, needed: 2) }
        guard bytes.count <= Self.maximumLength else { throw .tooLong(reply: "TUBE STATUS", bytes: bytes.count, maximum: Self.maximumLength) }
        full = UInt16(bytes[0]) << 8 | UInt16(bytes[1])
        reported = bytes.count - 2
        counts = bytes.dropFirst(2).map(Int.init) + Array(repeating: 0, count: Self.maximumLength - bytes.count)
    }

    public func isFull(_ type: Int) -> Bool { (0...15).contains(type) && full & (1 << type) != 0 }

    /// Types whose tube says full but counts no coin: a jammed tube or a failed sensor.
    public var suspectTubes: [Int] { (0..<16).filter { isFull($0) && counts[$0] == 0 } }
}
