import CoinMechSerial

/// The serial line's speed, for how long an answer takes to reach the mech: 10 bits a byte
/// (8N1) at `baud`. A GPIO mech has no line: its answers arrive at once.
public struct LineTiming: Sendable, Equatable {
    public var baud: Int

    public init(baud: Int) { self.baud = max(baud, 1) }

    /// Time `bytes` take on the line.
    public func transit(bytes: Int) -> Duration { .nanoseconds(Int64(bytes) * 10 * 1_000_000_000 / Int64(baud)) }

    /// Time the answer for `deviceSeq` takes on the line (its length depends on the number's digits).
    public func answerTransit(deviceSeq: UInt64) -> Duration {
        transit(bytes: SerialFrame.decision(deviceSeq: deviceSeq, accept: true).bytes.count)
    }
}
