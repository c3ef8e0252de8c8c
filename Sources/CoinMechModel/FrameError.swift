/// A stretch of the stream that was not a valid sentence. The parser skips it and
/// resynchronises on the next `$`.
public enum FrameError: Sendable, Hashable, CustomStringConvertible {
    /// Bytes outside any sentence.
    case garbage(byteCount: Int)
    case badChecksum(sentence: String)
    /// A sentence cut short: a new `$` arrived before its end.
    case truncated(sentence: String)
    /// No end of sentence within `SerialFrame.maximumLength` bytes.
    case overlong(byteCount: Int)
    /// Checksum right, contents wrong (unknown type, missing or bad fields).
    case malformed(sentence: String, reason: String)

    public var description: String {
        switch self {
        case .garbage(let count): "\(count) garbage byte(s) skipped"
        case .badChecksum(let sentence): "bad checksum: \(sentence)"
        case .truncated(let sentence): "truncated sentence: \(sentence)"
        case .overlong(let count): "overlong sentence (\(count) bytes) skipped"
        case .malformed(let sentence, let reason): "malformed sentence (\(reason)): \(sentence)"
        }
    }
}
