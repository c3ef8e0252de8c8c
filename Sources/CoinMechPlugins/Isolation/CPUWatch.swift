/// Whether a plugin host burns CPU where it has no business to: between calls, when a host
/// that only answers readings is asleep on its channel, or on more than one core while it loads.
///
/// A plugin's threads spinning between readings do not show in any call's time, and on a
/// two-core cabinet they take the deciding thread's core. The supervisor samples the host's CPU
/// clock every `period` and the wall time its calls took meanwhile; CPU beyond the calls' time
/// and a fifth of the period means threads of the plugin's own at work, and the host is
/// stopped (a crash: restarted, quarantined at the crash limit). Pure: the supervisor reads the
/// clocks and carries out the verdict.
struct CPUWatch: Sendable {
    /// How often a live host is sampled: a spinning thread costs the cabinet at most this long.
    static let period: UInt64 = 250_000_000
    /// CPU a host may use outside its calls, as a share of the time between samples: a fifth of
    /// a core (a host between calls uses microseconds: a log line, a reply's end).
    static let idleShare = 0.2

    /// What a sample found wrong.
    struct Overuse: Sendable, Equatable {
        /// CPU the host used since the last sample, its calls' wall time then, and the time between.
        var used: UInt64
        var inCalls: UInt64
        var elapsed: UInt64

        /// "used 248 ms of CPU in 250 ms, 0 ms of it answering readings".
        var description: String {
            "used \(used / 1_000_000) ms of CPU in \(elapsed / 1_000_000) ms, \(inCalls / 1_000_000) ms of it answering readings"
        }
    }

    private var baseline: (pid: Int32, cpu: UInt64, calls: UInt64, at: UInt64)?

    /// A sample of host `pid`: its CPU clock, the total wall time of its calls, the monotonic
    /// clock. Nil while all is well (or too soon to say); the overuse once the CPU it used since
    /// the last sample exceeds its calls' time and `idleShare` of the time between.
    mutating func sample(pid: Int32, cpu: UInt64, calls: UInt64, at now: UInt64) -> Overuse? {
        guard let last = baseline, last.pid == pid, cpu >= last.cpu, calls >= last.calls, now > last.at else {
            baseline = (pid, cpu, calls, now)
            return nil
        }
        let elapsed = now - last.at
        guard elapsed >= Self.period else { return nil }
        baseline = (pid, cpu, calls, now)
        let used = cpu - last.cpu
        let inCalls = calls - last.calls
        let allowed = inCalls + UInt64(Double(elapsed) * Self.idleShare)
        return used > allowed ? Overuse(used: used, inCalls: inCalls, elapsed: elapsed) : nil
    }

    /// Whether a host loading its plugin used more CPU than one core gives in `elapsed` (and a
    /// period more): loading and `create` run on one thread, so threads the plugin started spin.
    static func spinsWhileLoading(cpu: UInt64, elapsed: UInt64) -> Bool { cpu > elapsed + period }
}
