/// Splits what the adapter writes into replies. A line ends at LF (a CR before it is dropped);
/// empty lines are skipped; a line that cannot be read is reported as an error and dropped, and
/// bytes that never end a line are dropped after `maximumLineLength`, so garbage on the line
/// costs a bounded amount of memory.
public struct MDBAdapterLineParser: Sendable {
    /// The longest reply is `p,` and 36 bytes of hex (an identification); anything much longer
    /// is not from an adapter.
    public static let maximumLineLength = 160

    public enum Event: Sendable, Hashable {
        case reply(MDBAdapterReply)
        case error(MDBAdapterError)
    }

    private var line: [UInt8] = []
    private var overlong = 0

    public init() {}

    public mutating func feed(_ bytes: some Sequence<UInt8>, _ handle: (Event) -> Void) {
        for byte in bytes {
            if byte == UInt8(ascii: "\n") {
                if overlong > 0 {
                    handle(.error(.overlongLine(overlong)))
                } else {
                    if line.last == UInt8(ascii: "\r") { line.removeLast() }
                    if !line.isEmpty {
                        let text = String(decoding: line, as: UTF8.self)
                        do throws(MDBAdapterError) {
                            handle(.reply(try MDBAdapterReply(line: text[...])))
                        } catch {
                            handle(.error(error))
                        }
                    }
                }
                line.removeAll(keepingCapacity: true)
                overlong = 0
            } else if overlong > 0 {
                overlong += 1
            } else if line.count == Self.maximumLineLength {
                overlong = line.count + 1
                line.removeAll(keepingCapacity: true)
            } else {
                line.append(byte)
            }
        }
    }
}
