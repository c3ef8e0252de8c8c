/// One edge on a GPIO input line, with the kernel's timestamp (not a userspace clock).
public struct EdgeEvent: Sendable, Hashable {
    /// Nanoseconds, from the kernel's event timestamp (CLOCK_MONOTONIC for libgpiod 1.6).
    public var timestampNanoseconds: UInt64
    /// The line's offset on its chip.
    public var line: UInt32
    /// True for a rising edge (inactive → active on an active-high line).
    public var rising: Bool

    public init(timestampNanoseconds: UInt64, line: UInt32, rising: Bool) {
        self.timestampNanoseconds = timestampNanoseconds
        self.line = line
        self.rising = rising
    }
}

/// A recorded edge stream: one edge per line, `<t_ns> <line> <r|f>`, `#` comments.
/// The decoders' tests, `gpio-replay` and the simulator use this format.
public enum EdgeStream {
    public struct ParseError: Error, Sendable, Equatable, CustomStringConvertible {
        public let line: Int
        public let message: String
        public var description: String { "line \(line): \(message)" }

        public init(line: Int, message: String) {
            self.line = line
            self.message = message
        }
    }

    public static func parse(_ text: String) throws(ParseError) -> [EdgeEvent] {
        var edges: [EdgeEvent] = []
        for (index, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let content = raw.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
            let fields = content.split(whereSeparator: { $0 == " " || $0 == "\t" })
            if fields.isEmpty { continue }
            guard fields.count == 3, let time = UInt64(fields[0]), let line = UInt32(fields[1]), fields[2] == "r" || fields[2] == "f" else {
                throw ParseError(line: index + 1, message: "expected '<t_ns> <line> <r|f>', got '\(raw)'")
            }
            if let last = edges.last, time < last.timestampNanoseconds {
                throw ParseError(line: index + 1, message: "time goes backwards")
            }
            edges.append(EdgeEvent(timestampNanoseconds: time, line: line, rising: fields[2] == "r"))
        }
        return edges
    }

    public static func format(_ edges: [EdgeEvent]) -> String {
        edges.map { "\($0.timestampNanoseconds) \($0.line) \($0.rising ? "r" : "f")" }.joined(separator: "\n") + "\n"
    }
}
