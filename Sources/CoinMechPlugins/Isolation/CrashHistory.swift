/// When an isolated link crashed (or overran its budget), and what follows: a restart after a
/// back-off that doubles with each crash in the window, or, at `limit` crashes within `window`
/// seconds, quarantine. (Chrome forgives a crash per interval and gives up after three.)
public struct CrashHistory: Sendable, Equatable {
    public let limit: Int
    public let window: Double
    private(set) var times: [Double] = []

    public init(limit: Int, window: Double) {
        self.limit = max(1, limit)
        self.window = window
    }

    public enum Next: Sendable, Equatable {
        /// Start the host again after this many seconds.
        case restart(after: Double)
        /// Stop: too many crashes within the window (the count).
        case quarantine(crashes: Int)
    }

    /// Records a crash at `now` (seconds, monotonic) and says what to do.
    public mutating func record(at now: Double) -> Next {
        times = times.filter { now - $0 < window } + [now]
        if times.count >= limit { return .quarantine(crashes: times.count) }
        return .restart(after: min(10, 0.1 * Double(1 << min(times.count - 1, 10))))
    }

    /// Crashes within the window before `now`.
    public func recent(at now: Double) -> Int { times.filter { now - $0 < window }.count }
}
