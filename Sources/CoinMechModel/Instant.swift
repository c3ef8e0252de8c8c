/// A moment on CLOCK_MONOTONIC: the clock of every deadline, confirmation window and kernel
/// GPIO timestamp. Durations between instants are Swift's `Duration`.
public struct Instant: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// Nanoseconds since the clock's origin (boot).
    public var nanoseconds: UInt64

    public init(nanoseconds: UInt64) { self.nanoseconds = nanoseconds }

    public static func < (a: Instant, b: Instant) -> Bool { a.nanoseconds < b.nanoseconds }

    public static func + (instant: Instant, duration: Duration) -> Instant {
        let delta = duration.nanoseconds
        return Instant(nanoseconds: delta >= 0 ? instant.nanoseconds &+ UInt64(delta) : instant.nanoseconds &- UInt64(-delta))
    }

    public static func - (instant: Instant, duration: Duration) -> Instant { instant + (.zero - duration) }

    /// How long from `earlier` to `self` (negative if `earlier` is later).
    public static func - (later: Instant, earlier: Instant) -> Duration {
        .nanoseconds(Int64(bitPattern: later.nanoseconds &- earlier.nanoseconds))
    }

    public var description: String { "\(nanoseconds) ns" }
}

extension Duration {
    /// The duration in whole nanoseconds (rounded toward zero).
    public var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }

    /// The duration in milliseconds, as a `Double`.
    public var milliseconds: Double { Double(nanoseconds) / 1e6 }

    /// The duration in seconds, as a `Double`.
    public var seconds: Double { Double(nanoseconds) / 1e9 }
}
