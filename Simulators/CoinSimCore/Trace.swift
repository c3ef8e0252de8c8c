import Foundation

/// One line of a trace: bytes the device wrote ("tx") or read ("rx"), or an event.
public struct TraceEntry: Codable, Sendable, Hashable {
    /// Microseconds since the session started.
    public var tUs: Int64
    /// "tx", "rx" or "event".
    public var dir: String
    /// The bytes, one character per byte (U+0000–U+00FF), so garbage survives JSON.
    public var data: String?
    /// For events: "connect", "hangup", "disconnect".
    public var event: String?
    /// For "disconnect": how long the device stayed away.
    public var ms: Double?

    public init(tUs: Int64, dir: String, bytes: [UInt8]) {
        self.tUs = tUs
        self.dir = dir
        data = String(String.UnicodeScalarView(bytes.map { Unicode.Scalar($0) }))
    }

    public init(tUs: Int64, event: String, ms: Double? = nil) {
        self.tUs = tUs
        dir = "event"
        self.event = event
        self.ms = ms
    }

    public var bytes: [UInt8] { data.map { $0.unicodeScalars.map { UInt8(truncatingIfNeeded: $0.value) } } ?? [] }

    enum CodingKeys: String, CodingKey { case tUs = "t_us", dir, data, event, ms }
}

/// Writes a session to a frame log (JSON lines), flushing each entry.
final class TraceWriter {
    private let handle: FileHandle
    private let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return encoder
    }()

    init(path: String) throws(SimulatorError) {
        guard FileManager.default.createFile(atPath: path, contents: nil), let handle = FileHandle(forWritingAtPath: path) else {
            throw .trace("cannot create \(path)")
        }
        self.handle = handle
    }

    func write(_ entry: TraceEntry) {
        guard var data = try? encoder.encode(entry) else { return }
        data.append(UInt8(ascii: "\n"))
        handle.write(data)
    }

    deinit { try? handle.close() }
}

/// Reads a frame log written by `--record`.
public func readTrace(path: String) throws(SimulatorError) -> [TraceEntry] {
    guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { throw .trace("cannot read \(path)") }
    var entries: [TraceEntry] = []
    for (number, line) in text.split(separator: "\n").enumerated() where !line.isEmpty {
        guard let entry = try? JSONDecoder().decode(TraceEntry.self, from: Data(line.utf8)) else {
            throw .trace("\(path):\(number + 1): not a trace entry")
        }
        entries.append(entry)
    }
    return entries
}
