/// A stretch of the line that was not a frame for this receiver.
public enum CCTalkLineError: Sendable, Hashable, CustomStringConvertible {
    /// Bytes that started no frame (noise, a frame's tail after a reset of the receiver).
    case garbage(byteCount: Int)
    /// A whole frame whose checksum (or CRC) is wrong: dropped.
    case badChecksum(bytes: [UInt8])
    /// The start of a frame, then 50 ms without a byte: the receiver reset and dropped it.
    case timeout(byteCount: Int)
    /// The host's own bytes did not come back first on a line configured to echo them
    /// (`byteCount` of them never matched).
    case echoMissing(byteCount: Int)

    public var description: String {
        switch self {
        case .garbage(let count): "\(count) garbage byte(s) skipped"
        case .badChecksum(let bytes): "bad checksum: \(CCTalkFrame.hex(bytes))"
        case .timeout(let count): "\(count) byte(s) of an unfinished frame dropped after 50 ms of silence"
        case .echoMissing(let count): "\(count) byte(s) of the host's own request did not come back (echo expected)"
        }
    }
}

/// What a receiver skipped and read, by kind, since it started.
public struct CCTalkLineCounts: Sendable, Hashable, Codable {
    public var frames = 0
    public var garbageBytes = 0
    public var badChecksums = 0
    public var timeouts = 0
    /// Bytes of the host's own requests read back and discarded.
    public var echoBytes = 0
    public var echoesMissing = 0

    public init() {}

    mutating func count(_ error: CCTalkLineError) {
        switch error {
        case .garbage(let bytes): garbageBytes += bytes
        case .badChecksum: badChecksums += 1
        case .timeout: timeouts += 1
        case .echoMissing: echoesMissing += 1
        }
    }
}
