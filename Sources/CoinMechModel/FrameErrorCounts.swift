/// Counts of what the parser skipped, by kind.
public struct FrameErrorCounts: Sendable, Hashable, Codable {
    public var garbageBytes = 0
    public var badChecksums = 0
    public var truncated = 0
    public var overlong = 0
    public var malformed = 0

    public init() {}

    /// Sentences lost to errors (garbage is counted in bytes, not here).
    public var sentences: Int { badChecksums + truncated + overlong + malformed }

    public mutating func count(_ error: FrameError) {
        switch error {
        case .garbage(let bytes): garbageBytes += bytes
        case .badChecksum: badChecksums += 1
        case .truncated: truncated += 1
        case .overlong: overlong += 1
        case .malformed: malformed += 1
        }
    }
}
