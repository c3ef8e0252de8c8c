/// One EVA-DTS data segment (EVA-DTS 6.2, 2.2): a block identifier and its data elements in
/// their numbered positions, separated by `*`. An element that is not available is empty (only
/// its `*` is sent), and empty elements at the end are left off (`ID1*VMC123`).
public struct DEXSegment: Sendable, Equatable {
    public var identifier: String
    /// Element 1, 2, … of the block; nil where the value is not available.
    public var elements: [String?]

    public init(_ identifier: String, _ elements: [String?]) {
        self.identifier = identifier
        self.elements = elements
    }

    /// The segment's text, without its CR LF.
    public var text: String {
        var present = elements.map { $0 ?? "" }
        while present.last == "" { present.removeLast() }
        return ([identifier] + present).joined(separator: "*")
    }

    /// An alphanumeric (AN) element as the standard sends it: a printable ASCII character as
    /// itself, `*` (the delimiter), `^` (the escape) and anything else byte by byte as `^XX^`
    /// (2.3.2.1: `*` is `^2A^`, CR `^0D^`, the upper 128 `^80^`…).
    public static func alphanumeric(_ text: String) -> String {
        var out = ""
        for byte in text.utf8 {
            if (0x20...0x7E).contains(byte), byte != UInt8(ascii: "*"), byte != UInt8(ascii: "^") {
                out.unicodeScalars.append(Unicode.Scalar(byte))
            } else {
                out += "^" + DEXCRC16.hex(UInt16(byte)).suffix(2) + "^"
            }
        }
        return out
    }
}
