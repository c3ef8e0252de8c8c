import CoinMechModel
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Named places on the money path where a test can make the daemon die, stall or fail on
/// purpose (FoundationDB's and TigerBeetle's fault injection, done small). Switched on by the
/// environment, parsed once at start; when none is set, `hit` is one load and one branch.
///
///     COINMECH_FAILPOINTS=after-commit=kill            the first time the batch has committed
///     COINMECH_FAILPOINTS=confirmation-received=kill@3 the third time a confirmation arrives
///     COINMECH_FAILPOINTS=before-answer=sleep:120      stall 120 ms every time
///     COINMECH_FAILPOINTS=payout-moves-committed=fail@1 the first such commit says it failed
///
/// Actions: `kill` (SIGKILL to itself: a crash that runs no cleanup, as `kill -9` or a power
/// cut), `sleep:MS` (the thread stalls), `fail` (where a place asks `fails`: the work done is
/// reported failed, as a disk error after a commit landed), `off`. `@N` fires on the Nth hit
/// only (for `kill`, the process ends there anyway).
public struct Failpoints: Sendable {
    /// The places, in the order a coin passes them.
    public typealias Point = Failpoint

    public enum Action: Sendable, Equatable {
        case kill
        case sleep(milliseconds: Int)
        case fail
    }

    /// Why `COINMECH_FAILPOINTS` could not be used.
    public struct ParseError: Error, CustomStringConvertible, Sendable {
        public let message: String
        public var description: String {
            "COINMECH_FAILPOINTS: \(message) (known points: \(Point.allCases.map(\.rawValue).joined(separator: ", ")); actions: kill, sleep:MS, fail, off; optional @N)"
        }
    }

    struct Armed: Sendable {
        var action: Action
        /// Fire on this hit only (1 = the first); nil: every hit.
        var onHit: Int?
    }

    private let armed: [Point: Armed]
    private let counters: HitCounters?

    /// No failpoint armed.
    public static let none = Failpoints(armed: [:])

    init(armed: [Point: Armed]) {
        self.armed = armed
        counters = armed.isEmpty ? nil : HitCounters()
    }

    /// The failpoints `COINMECH_FAILPOINTS` names (none when it is unset or empty).
    public static func fromEnvironment() throws(ParseError) -> Failpoints {
        guard let value = getenv("COINMECH_FAILPOINTS").map({ String(cString: $0) }) else { return .none }
        return try parse(value)
    }

    public static func parse(_ text: String) throws(ParseError) -> Failpoints {
        var armed: [Point: Armed] = [:]
        for item in text.split(separator: ",").map({ String($0.filter { $0 != " " }) }) where !item.isEmpty {
            let parts = item.split(separator: "=", maxSplits: 1).map(String.init)
            guard parts.count == 2, let point = Point(rawValue: parts[0]) else { throw ParseError(message: "'\(item)' names no failpoint") }
            var spec = parts[1]
            var onHit: Int?
            if let at = spec.firstIndex(of: "@") {
                guard let n = Int(spec[spec.index(after: at)...]), n >= 1 else { throw ParseError(message: "'\(item)': @N takes a number from 1") }
                onHit = n
                spec = String(spec[..<at])
            }
            switch spec {
            case "off": continue
            case "kill": armed[point] = Armed(action: .kill, onHit: onHit)
            case "fail":
                // Anywhere else nothing asks, and the failure asked for would never come.
                guard point.canFail else {
                    throw ParseError(message: "'\(item)': only \(Point.allCases.filter(\.canFail).map(\.rawValue).joined(separator: ", ")) can fail")
                }
                armed[point] = Armed(action: .fail, onHit: onHit)
            case let sleep where sleep.hasPrefix("sleep:"):
                guard let ms = Int(sleep.dropFirst("sleep:".count)), (0...600_000).contains(ms) else {
                    throw ParseError(message: "'\(item)': sleep takes milliseconds (0 to 600000)")
                }
                armed[point] = Armed(action: .sleep(milliseconds: ms), onHit: onHit)
            default:
                throw ParseError(message: "'\(item)': unknown action '\(spec)'")
            }
        }
        return Failpoints(armed: armed)
    }

    /// True when at least one failpoint is armed (the daemon logs which at start).
    public var isArmed: Bool { !armed.isEmpty }
    public var description: String { armed.keys.map(\.rawValue).sorted().joined(separator: ", ") }

    /// Passes `point`: acts if it is armed.
    @inline(__always)
    public func hit(_ point: Point) {
        guard let counters else { return }
        fire(point, counters)
    }

    /// Passes `point` as `hit` does, and says whether the work just done must be reported as
    /// failed (`fail` armed, on this hit).
    @inline(__always)
    public func fails(_ point: Point) -> Bool {
        guard let counters else { return false }
        return fire(point, counters)
    }

    @discardableResult
    private func fire(_ point: Point, _ counters: HitCounters) -> Bool {
        guard let armed = armed[point] else { return false }
        let count = counters.increment(point)
        if let onHit = armed.onHit, onHit != count { return false }
        switch armed.action {
        case .fail:
            Self.say(point, "fail")
            return true
        case .kill:
            Self.say(point, "kill")
            kill(getpid(), SIGKILL)
        case .sleep(let milliseconds):
            usleep(useconds_t(milliseconds) * 1000)
        }
        return false
    }

    /// One line on stderr, written at once (no buffer a kill would lose).
    private static func say(_ point: Point, _ action: String) {
        let line = "coinmechd: failpoint \(point.rawValue): \(action)\n"
        _ = line.withCString { write(2, $0, strlen($0)) }
    }
}

/// Hits per failpoint, counted from any thread.
final class HitCounters: Sendable {
    private let counts = Mutex<[Failpoints.Point: Int]>([:])

    func increment(_ point: Failpoints.Point) -> Int {
        counts.withLock { counts in
            counts[point, default: 0] += 1
            return counts[point]!
        }
    }
}
