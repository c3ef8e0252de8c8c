/// A changer's reply that does not say what its command asks: the reply is not used, and what
/// it would have changed stays as it was.
public enum MDBReplyError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Fewer bytes than the reply's fixed part.
    case tooShort(reply: String, bytes: Int, needed: Int)
    /// More bytes than the reply can hold.
    case tooLong(reply: String, bytes: Int, maximum: Int)
    /// A field whose value the specification does not allow.
    case badField(reply: String, field: String, value: String)
    /// A POLL event that ends in the middle (a two-byte event with its second byte missing).
    case truncatedEvent(UInt8)

    public var description: String {
        switch self {
        case .tooShort(let reply, let bytes, let needed): "the changer's \(reply) reply has \(bytes) bytes; it needs at least \(needed)"
        case .tooLong(let reply, let bytes, let maximum): "the changer's \(reply) reply has \(bytes) bytes; it holds at most \(maximum)"
        case .badField(let reply, let field, let value): "the changer's \(reply) reply has \(field) \(value), which MDB does not allow"
        case .truncatedEvent(let first): "the changer's POLL reply ends inside the event that starts \(MDBHex.encode([first]))"
        }
    }
}
