import Foundation
import HummingbirdBcrypt
import NIOPosix
import Synchronization

/// Where a login is decided: the throttle first (`LoginThrottle`: a guess that must wait is
/// answered at once, unhashed), then one of `slots` password checks (bcrypt at cost 12 is a
/// quarter of a second of a core, on NIO's pool for blocking work, never on an event loop or the
/// ingest's tasks). Waiting for a check, a login from a name and a source with no recent
/// failure goes ahead of any that failed: two scripts guessing once kept 18 of 19 operators'
/// logins out ("too many logins at once"); now a guesser waits behind them.
final class LoginGate: Sendable {
    enum Verdict: Sendable, Equatable {
        case allowed
        case refused
        /// Too many failures lately: try again after this many seconds.
        case throttled(Double)
        /// No check could start soon enough (the dashboard is flooded): try again shortly.
        case busy
    }

    let slots: Int
    /// Waiting checks at most, from clean and from suspect requests.
    static let cleanWaiting = 64
    static let suspectWaiting = 4

    private struct State: Sendable {
        var throttle = LoginThrottle()
        var running = 0
        var clean: [CheckedContinuation<Bool, Never>] = []
        var suspect: [CheckedContinuation<Bool, Never>] = []
    }

    private let state = Mutex(State())

    init(slots: Int = 2) { self.slots = slots }

    /// Decides a login: `lookUp` (the operator's hash, nil for no such name) only once the
    /// throttle lets it through and a check slot is free.
    func login(name: String, password: String, source: String, now: Double, lookUp: () async throws -> String?) async throws -> Verdict {
        let (wait, clean) = state.withLock { ($0.throttle.wait(name: name, source: source, now: now), $0.throttle.isClean(name: name, source: source)) }
        if let wait { return .throttled(wait) }
        guard await acquire(clean: clean) else { return .busy }
        defer { release() }
        let hash = try await lookUp()
        // An unknown name costs what a wrong password does.
        let matched = try await NIOThreadPool.singleton.runIfActive { Bcrypt.verify(password, hash: hash ?? Self.dummyHash) }
        let valid = matched && hash != nil
        state.withLock {
            if valid { $0.throttle.succeeded(name: name, source: source) } else { $0.throttle.failed(name: name, source: source, now: Date().timeIntervalSince1970) }
        }
        return valid ? .allowed : .refused
    }

    private func acquire(clean: Bool) async -> Bool {
        await withCheckedContinuation { continuation in
            let now = state.withLock { state -> Bool? in
                if state.running < slots {
                    state.running += 1
                    return true
                }
                if clean, state.clean.count < Self.cleanWaiting {
                    state.clean.append(continuation)
                    return nil
                }
                if !clean, state.suspect.count < Self.suspectWaiting {
                    state.suspect.append(continuation)
                    return nil
                }
                return false
            }
            if let now { continuation.resume(returning: now) }
        }
    }

    /// The slot passes to the next waiting check, clean ones first.
    private func release() {
        let next = state.withLock { state -> CheckedContinuation<Bool, Never>? in
            if !state.clean.isEmpty { return state.clean.removeFirst() }
            if !state.suspect.isEmpty { return state.suspect.removeFirst() }
            state.running -= 1
            return nil
        }
        next?.resume(returning: true)
    }

    /// A hash to verify against when the name is unknown, at the cost of every real one (12), so
    /// that a wrong name costs the same time as a wrong password.
    static let dummyHash = Bcrypt.hash("coinmech-fleet: no such operator", cost: 12)
}
