/// How many lines a plugin may log: a burst, then a steady rate; what is dropped is counted and
/// said with the next line that passes. A plugin that logs on every reading must not flood the
/// journal, nor slow the deciding thread.
public struct LogRateLimit: Sendable {
    public var burst: Double = 20
    public var perSecond: Double = 5
    private var tokens: Double = 20
    private var last: UInt64 = 0
    private var dropped = 0

    public init() {}

    /// Whether a line at `now` (monotonic ns) may pass, and how many were dropped before it.
    public mutating func admit(now: UInt64) -> (pass: Bool, droppedBefore: Int) {
        if last != 0 { tokens = min(burst, tokens + Double(now &- last) / 1e9 * perSecond) }
        last = now
        guard tokens >= 1 else {
            dropped += 1
            return (false, 0)
        }
        tokens -= 1
        defer { dropped = 0 }
        return (true, dropped)
    }
}
