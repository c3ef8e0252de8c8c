/// A line the adapter answers with (ASCII, ended by CR LF): its command group's letter, a comma,
/// then what happened.
public enum MDBAdapterReply: Sendable, Hashable {
    /// `v,<version>,<id>`: the firmware version and the adapter's id, as it spells them.
    case version(String)
    /// `m,ACK` or `m,NACK`: master mode was (not) switched.
    case masterMode(acknowledged: Bool)
    /// `f,ACK` or `f,NACK`: a setting was (not) taken.
    case configuration(acknowledged: Bool)
    /// `p,…`: what the peripheral answered a transaction.
    case peripheral(Answer)

    /// A peripheral's answer to one transaction.
    public enum Answer: Sendable, Hashable {
        /// `p,ACK`: it acknowledged (and, to a POLL, had nothing to report).
        case ack
        /// `p,NACK`: nobody answered in time (no peripheral at that address, or it is busy).
        case noAnswer
        /// `p,<hex>`: its data, the checksum already checked and removed by the adapter.
        case data([UInt8])
    }

    /// The line as the adapter writes it, without its CR LF: what a simulated adapter sends.
    public var text: String {
        switch self {
        case .version(let version): "v,\(version)"
        case .masterMode(let acknowledged): acknowledged ? "m,ACK" : "m,NACK"
        case .configuration(let acknowledged): acknowledged ? "f,ACK" : "f,NACK"
        case .peripheral(.ack): "p,ACK"
        case .peripheral(.noAnswer): "p,NACK"
        case .peripheral(.data(let bytes)): "p," + MDBHex.encode(bytes)
        }
    }

    /// Parses one line, without its CR LF.
    public init(line: Substring) throws(MDBAdapterError) {
        let parts = line.split(separator: ",", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.count == 2, parts[0].count == 1 else { throw .malformedReply(String(line)) }
        let field = parts[1]
        switch parts[0] {
        case "v":
            self = .version(String(field))
        case "m":
            self = .masterMode(acknowledged: try Self.acknowledgement(field, line))
        case "f":
            self = .configuration(acknowledged: try Self.acknowledgement(field, line))
        case "p":
            switch field {
            case "ACK": self = .peripheral(.ack)
            case "NACK": self = .peripheral(.noAnswer)
            default:
                guard !field.isEmpty, let bytes = MDBHex.decode(field.utf8) else { throw .badHex(String(line)) }
                self = .peripheral(.data(bytes))
            }
        default:
            throw .unknownReply(String(line))
        }
    }

    private static func acknowledgement(_ field: Substring, _ line: Substring) throws(MDBAdapterError) -> Bool {
        switch field {
        case "ACK": return true
        case "NACK": return false
        default: throw .malformedReply(String(line))
        }
    }
}
