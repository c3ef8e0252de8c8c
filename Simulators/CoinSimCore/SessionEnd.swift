/// When a simulator's session ends, for the simulators that linger the same way (ccTalk, MDB):
/// a linger after the last coin, once what is on its way is out; at most 3 s plus the linger
/// after SIGTERM or SIGINT (sooner if the host hangs up); or when no host came in time.
struct SessionEnd {
    private let linger: UInt64
    private let hostDeadline: UInt64?
    /// The linger runs until then.
    private(set) var lingerUntil: UInt64?
    /// SIGTERM or SIGINT came then: no more insertions.
    private(set) var stoppingSince: UInt64?

    init(options: SimulatorOptions, start: UInt64) {
        linger = UInt64(options.lingerMilliseconds * 1e6)
        hostDeadline = options.hostTimeoutSeconds > 0 ? start + UInt64(options.hostTimeoutSeconds * 1e9) : nil
    }

    var isStopping: Bool { stoppingSince != nil }

    mutating func stop(at now: UInt64) {
        if stoppingSince == nil { stoppingSince = now }
        if lingerUntil == nil { lingerUntil = now + linger }
    }

    /// When the loop must turn next: the earliest of `dues` and the linger's end; at most a
    /// second away, 10 ms while no host is connected (to notice one coming).
    func wake(now: UInt64, connected: Bool, dues: [UInt64?]) -> UInt64 {
        (dues + [lingerUntil]).reduce(now + (connected ? 1_000_000_000 : 10_000_000)) { wake, due in due.map { min(wake, $0) } ?? wake }
    }

    /// The scenario has no more coins.
    mutating func lastCoin(at now: UInt64) { lingerUntil = now + linger }

    /// No host has opened the device by the `--host-timeout`.
    func hostTimedOut(at now: UInt64, everConnected: Bool) -> Bool {
        guard !everConnected, let hostDeadline else { return false }
        return now > hostDeadline
    }

    /// Whether the session is over now: `quiet` when nothing is on its way to the host.
    func isOver(at now: UInt64, connected: Bool, quiet: Bool) -> Bool {
        if let until = lingerUntil, now >= until, quiet { return true }
        if let since = stoppingSince, !connected || now &- since > 3_000_000_000 + linger { return true }
        return false
    }
}
