/// One slot of a coin acceptor's event buffer: result A and result B.
public struct BufferedResult: Sendable, Hashable, CustomStringConvertible {
    public var a: UInt8
    public var b: UInt8

    public init(a: UInt8, b: UInt8) {
        self.a = a
        self.b = b
    }

    /// A credit for the coin in position `a` (1–16), sent down sorter path `b`.
    public static func credit(position: Int, sorterPath: UInt8) -> BufferedResult {
        BufferedResult(a: UInt8(position), b: sorterPath)
    }

    /// An error event: A = 0, B the code.
    public static func error(_ error: CoinAcceptorError) -> BufferedResult { BufferedResult(a: 0, b: error.code) }

    public static let null = BufferedResult(a: 0, b: 0)

    /// What the slot says.
    public enum Meaning: Sendable, Hashable {
        /// The coin in `position` passed the credit sensor and went down `sorterPath`.
        case credit(position: Int, sorterPath: UInt8)
        case error(CoinAcceptorError)
        /// A = 17–255: not a position; the device is broken or the frame was misread.
        case invalid
    }

    public var meaning: Meaning {
        switch a {
        case 0: .error(CoinAcceptorError(code: b))
        case 1...16: .credit(position: Int(a), sorterPath: b)
        default: .invalid
        }
    }

    /// An all-zero slot: what a buffer holds after power-up before anything happened.
    public var isNull: Bool { a == 0 && b == 0 }

    public var description: String {
        switch meaning {
        case .credit(let position, let path): "credit position \(position) path \(path)"
        case .error(let error): "error \(error.code) (\(error.name))"
        case .invalid: "invalid result \(a),\(b)"
        }
    }
}

/// A coin acceptor's reply to header 229: its event counter and its last five results,
/// newest first: `[counter][A1][B1]…[A5][B5]`.
///
/// The counter counts events from 0 at power-up or reset and wraps 255 → 1 (never back to 0),
/// so a counter of 0 always means the device started again.
public struct CreditBuffer: Sendable, Hashable, CustomStringConvertible {
    public var counter: UInt8
    /// Newest first; always `depth` slots.
    public var results: [BufferedResult]

    /// Events the buffer holds.
    public static let depth = 5
    /// The reply's data length.
    public static let byteCount = 1 + 2 * depth

    public init(counter: UInt8, results: [BufferedResult]) {
        precondition(results.count == Self.depth, "a credit buffer has 5 slots")
        self.counter = counter
        self.results = results
    }

    /// Reads the reply's data; nil unless it is exactly 11 bytes.
    public init?(bytes: [UInt8]) {
        guard bytes.count == Self.byteCount else { return nil }
        counter = bytes[0]
        results = (0..<Self.depth).map { BufferedResult(a: bytes[1 + 2 * $0], b: bytes[2 + 2 * $0]) }
    }

    public var bytes: [UInt8] { [counter] + resultBytes }

    /// The ten result bytes, newest first.
    public var resultBytes: [UInt8] { results.flatMap { [$0.a, $0.b] } }

    /// The next counter value after `counter`: 255 is followed by 1.
    public static func next(after counter: UInt8) -> UInt8 { counter == 255 ? 1 : counter + 1 }

    /// Events between counter `from` and counter `to` (`to` ≠ 0), going forward with the wrap:
    /// 1–254.
    public static func distance(from: UInt8, to: UInt8) -> Int {
        if from == 0 { return Int(to) }
        return to > from ? Int(to - from) : Int(to) + 255 - Int(from)
    }

    public var description: String { "counter \(counter): " + results.map(\.description).joined(separator: "; ") }
}
