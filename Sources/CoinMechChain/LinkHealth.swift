import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Whether a link can be trusted to decide, shared by the link's code and everyone who reports
/// on it. A hung or quarantined link is not called again: the chain rejects for it, and the
/// deciding loop inhibits the mech until a reload with another plugin or configuration.
public final class LinkHealth: Sendable {
    public enum State: UInt8, Sendable, Codable, CustomStringConvertible {
        case ok = 0
        /// Isolated: its plugin host died and is being started again (readings meanwhile are returned).
        case restarting = 1
        /// Took longer than its budget in process: the daemon cannot stop it, so it is not called again.
        case hung = 2
        /// Crashed too often, or crashed the daemon: never called until a reload changes it.
        case quarantined = 3

        public var description: String {
            switch self {
            case .ok: "ok"
            case .restarting: "restarting"
            case .hung: "hung"
            case .quarantined: "quarantined"
            }
        }
    }

    /// Why a link is not `ok`, for status, logs and the ledger.
    public struct Problem: Sendable, Hashable, Codable {
        public var state: State
        /// What happened, in a word: `crashes`, `crashed_daemon`, `over_budget`, `host_failed`.
        public var cause: String
        /// A sentence for the operator: what happened and what lifts it.
        public var reason: String
        /// Seconds since 1970.
        public var since: Double

        public init(state: State, cause: String, reason: String, since: Double = LinkHealth.wallClock()) {
            self.state = state
            self.cause = cause
            self.reason = reason
            self.since = since
        }
    }

    private let state = Atomic<UInt8>(State.ok.rawValue)
    private let problemText = Mutex<Problem?>(nil)
    private let alarm: PluginAlarm?

    public init(alarm: PluginAlarm? = nil, initial: Problem? = nil) {
        self.alarm = alarm
        if let initial {
            state.store(initial.state.rawValue, ordering: .relaxed)
            problemText.withLock { $0 = initial }
        }
    }

    public var current: State { State(rawValue: state.load(ordering: .relaxed)) ?? .ok }

    /// Hung or quarantined: the chain does not call the link.
    @inline(__always)
    public var blocksCalls: Bool { state.load(ordering: .relaxed) >= State.hung.rawValue }

    /// The problem, or nil when the link is ok.
    public var problem: Problem? { current == .ok ? nil : problemText.withLock { $0 } }

    /// Records a problem and rings the alarm. A quarantine is final for this link; a hang is
    /// not undone by a later restart state either.
    public func mark(_ problem: Problem) {
        let changed: Bool = problemText.withLock { current in
            if let current, current.state.rawValue > problem.state.rawValue { return false }
            current = problem
            state.store(problem.state.rawValue, ordering: .relaxed)
            return true
        }
        if changed { alarm?.raise() }
    }

    /// Back to ok (an isolated link's new host is up), unless hung or quarantined.
    public func recovered() {
        let changed: Bool = problemText.withLock { current in
            guard current?.state == .restarting else { return false }
            current = nil
            state.store(State.ok.rawValue, ordering: .relaxed)
            return true
        }
        if changed { alarm?.raise() }
    }

    public static func wallClock() -> Double {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
    }
}
