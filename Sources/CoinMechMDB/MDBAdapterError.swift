/// A line from the adapter that cannot be read: the line is dropped and counted, and the
/// transaction it answered is treated as unanswered.
public enum MDBAdapterError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Not `<letter>,<field>`, or an acknowledgement that is neither ACK nor NACK.
    case malformedReply(String)
    /// A command group the host never uses (for example a cashless device's `c,…`).
    case unknownReply(String)
    /// `p,` followed by something other than whole bytes of hex.
    case badHex(String)
    /// More than `MDBAdapterLineParser.maximumLineLength` bytes without a line end.
    case overlongLine(Int)

    public var description: String {
        switch self {
        case .malformedReply(let line): "the MDB adapter sent a line that is not '<group>,<reply>': \(Self.quoted(line))"
        case .unknownReply(let line): "the MDB adapter answered for a command group the host does not use: \(Self.quoted(line))"
        case .badHex(let line): "the MDB adapter's peripheral data is not whole bytes of hex: \(Self.quoted(line))"
        case .overlongLine(let count): "the MDB adapter sent \(count) bytes without a line end; is the device an MDB adapter at 115200 baud?"
        }
    }

    private static func quoted(_ line: String) -> String {
        "'" + String(line.unicodeScalars.prefix(80).map { $0.isASCII && $0.value >= 0x20 ? Character($0) : "?" }) + "'"
    }
}
