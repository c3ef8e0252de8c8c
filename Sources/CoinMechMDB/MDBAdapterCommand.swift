/// A line the host sends to a USB/serial MDB master adapter of the kind most Linux hosts use
/// (the Qibixx MDB-USB and MDB Pi HAT "generic master" protocol, 115200 8N1): ASCII, ended by
/// LF. The adapter drives the 9-bit bus, adds the checksum, acknowledges the peripheral's data,
/// and answers each line with one `MDBAdapterReply`.
public enum MDBAdapterCommand: Sendable, Hashable {
    /// `V`: the adapter's firmware version.
    case version
    /// `M,1` or `M,0`: start or stop master mode.
    case masterMode(Bool)
    /// `R,RESET`: a reset of the whole bus (a break of at least 100 ms, then 200 ms of setup
    /// time before a peripheral answers).
    case busReset
    /// `F,RESPTIMEOUT,<ms>`: how long the adapter waits for a peripheral's answer. MDB says 5 ms;
    /// many changers need more. The adapter takes 10 to 1,000.
    case responseTimeout(milliseconds: Int)
    /// `R,<command>[,<data>]`: one bus transaction.
    case transaction(MDBTransaction)

    /// The adapter's accepted range for `responseTimeout`.
    public static let responseTimeoutRange = 10...1000

    /// The line as sent, LF included.
    public var line: [UInt8] { Array((text + "\n").utf8) }

    /// The line without its LF, for logs and traces.
    public var text: String {
        switch self {
        case .version: "V"
        case .masterMode(let on): on ? "M,1" : "M,0"
        case .busReset: "R,RESET"
        case .responseTimeout(let milliseconds): "F,RESPTIMEOUT,\(milliseconds)"
        case .transaction(let transaction):
            transaction.data.isEmpty
                ? "R,\(MDBHex.encode([transaction.command]))"
                : "R,\(MDBHex.encode([transaction.command])),\(MDBHex.encode(transaction.data))"
        }
    }

    /// Reads a line as the adapter does (without its LF; a CR before it is dropped): what a
    /// simulated adapter and a trace need. Nil for a line the adapter would not take.
    public init?(line: Substring) {
        var line = line
        if line.last == "\r" { line.removeLast() }
        let parts = line.split(separator: ",", omittingEmptySubsequences: false)
        switch (parts.first, parts.count) {
        case ("V", 1): self = .version
        case ("M", 2) where parts[1] == "1" || parts[1] == "0": self = .masterMode(parts[1] == "1")
        case ("R", 2) where parts[1] == "RESET": self = .busReset
        case ("F", 3) where parts[1] == "RESPTIMEOUT":
            guard let milliseconds = Int(parts[2]), Self.responseTimeoutRange.contains(milliseconds) else { return nil }
            self = .responseTimeout(milliseconds: milliseconds)
        case ("R", 2), ("R", 3):
            guard let command = MDBHex.decode(parts[1].utf8), command.count == 1 else { return nil }
            let data = parts.count == 3 ? MDBHex.decode(parts[2].utf8) : []
            guard let data, parts.count == 2 || !data.isEmpty else { return nil }
            self = .transaction(MDBTransaction(command: command[0], data: data))
        default: return nil
        }
    }
}
