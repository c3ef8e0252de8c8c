/// The serial line's speed, for how long an answer takes to reach the mech: 10 bits a byte
/// (8N1) at `baud`. A GPIO mech has no line: its answers arrive at once.
public struct LineTiming: Sendable, Equatable {
    public var baud: Int
    /// The answer's bytes besides the coin's number, whose digits vary (the driver knows its
    /// sentence: `SerialFrame.decisionFraming`).
    public var answerFraming: Int

    public init(baud: Int, answerFraming: Int) {
        self.baud = max(baud, 1)
        self.answerFraming = answerFraming
    }

    /// Time `bytes` take on the line.
    public func transit(bytes: Int) -> Duration { .nanoseconds(Int64(bytes) * 10 * 1_000_000_000 / Int64(baud)) }

    /// Time the answer for `deviceSeq` takes on the line (its length depends on the number's digits).
    public func answerTransit(deviceSeq: UInt64) -> Duration {
        var digits = 1
        var rest = deviceSeq / 10
        while rest > 0 { digits += 1; rest /= 10 }
        return transit(bytes: answerFraming + digits)
    }
}
