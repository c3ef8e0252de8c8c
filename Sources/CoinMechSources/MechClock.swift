import CoinMechModel

/// Places the mech's millisecond clock on CLOCK_MONOTONIC, to know when a reading left the
/// mech rather than when the daemon got round to reading it.
///
/// The kernel does not time-stamp serial bytes: after the daemon was stalled (a paused process,
/// a slow plugin, a busy machine) every reading waiting in the tty buffer is read at the same
/// moment, and looks fresh. A mech that stamps its readings with its own clock lets the host
/// tell. The offset between the two clocks is estimated as the smallest (read time − mech
/// time) seen: the reading that waited least. Allowed to creep up by `driftPPM` of the elapsed
/// time, it follows a mech clock that runs slow; a fast one lowers the minimum by itself.
///
/// The first reading after a (re)start sets the offset, so its own wait cannot be seen: it is
/// taken as fresh. With credit on confirmation that costs no money, only an answer that
/// arrives after the mech gave up.
public struct MechClock: Sendable {
    /// Crystal tolerance allowed for, in parts per million (a cheap crystal is ±100 ppm).
    public var driftPPM: Double = 200
    /// host ns − mech ns of the least-delayed reading, creeping with the allowed drift.
    private var offset: Int64?
    private var offsetSetAt: UInt64 = 0
    private var lastMechNanoseconds: UInt64 = 0

    public init() {}

    /// When a reading stamped `mechMilliseconds` by the mech, and read at `readAt`, left the
    /// mech. Never later than `readAt`.
    public mutating func sentAt(mechMilliseconds: UInt64, readAt: Instant) -> Instant {
        Instant(nanoseconds: sentAt(mechMilliseconds: mechMilliseconds, readAt: readAt.nanoseconds))
    }

    mutating func sentAt(mechMilliseconds: UInt64, readAt: UInt64) -> UInt64 {
        let mech = mechMilliseconds &* 1_000_000
        let sample = Int64(bitPattern: readAt &- mech)
        if offset == nil || mech < lastMechNanoseconds {
            // First reading, or the mech's clock went back (it restarted): start again.
            offset = sample
            offsetSetAt = readAt
        } else if let current = offset {
            let creep = Int64(Double(readAt &- offsetSetAt) * driftPPM / 1_000_000)
            offset = min(sample, current &+ creep)
            offsetSetAt = readAt
        }
        lastMechNanoseconds = mech
        let sent = mech &+ UInt64(bitPattern: offset!)
        return min(sent, readAt)
    }

    /// Forgets the offset (the mech powered up: its clock starts again).
    public mutating func reset() {
        offset = nil
        lastMechNanoseconds = 0
    }
}
