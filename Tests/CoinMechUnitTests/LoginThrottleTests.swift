@testable import CoinMechFleetWeb
import Testing

/// Failed logins per name and per source (docs/FLEET.md, "The dashboard"): a few free, then a
/// wait that doubles, bounded; a success clears both.
@Suite("Login throttle: a few failures free, then a doubling wait per source and per name; a success clears them")
struct LoginThrottleTests {
    @Test("a source's 4th failure makes it wait 1 s, then 2, 4 … up to 5 minutes; another source is not held by it")
    func source() {
        var t = LoginThrottle()
        var waits: [Double?] = []
        for n in 0..<14 {
            let now = Double(n) * 1000
            waits.append(t.wait(name: "name-\(n)", source: "10.0.0.1", now: now))
            t.failed(name: "name-\(n)", source: "10.0.0.1", now: now)
            waits.append(t.wait(name: "other", source: "10.0.0.1", now: now))
        }
        #expect(waits.prefix(6).allSatisfy { $0 == nil }, "three failures free: \(waits.prefix(6))")
        #expect(Array(waits.compactMap { $0 }.prefix(4)) == [1, 2, 4, 8])
        #expect(waits.compactMap { $0 }.max() == 300)
        #expect(t.wait(name: "alice", source: "10.0.0.2", now: 11_000) == nil)
        #expect(t.isClean(name: "alice", source: "10.0.0.2") && !t.isClean(name: "alice", source: "10.0.0.1"))
    }

    @Test("a name guessed from many sources waits too, at most a minute; its owner's success clears it")
    func name() {
        var t = LoginThrottle()
        for n in 0..<20 { t.failed(name: "alice", source: "10.0.1.\(n)", now: 100) }
        let wait = t.wait(name: "alice", source: "10.0.2.1", now: 100)
        #expect(wait == 60, "\(String(describing: wait))")
        #expect(t.wait(name: "alice", source: "10.0.2.1", now: 161) == nil)
        t.succeeded(name: "alice", source: "10.0.2.1")
        #expect(t.names["alice"] == nil && t.isClean(name: "alice", source: "10.0.2.1"))
    }

    @Test("records are bounded: a guesser naming endless sources forgets the idlest first")
    func bounded() {
        var t = LoginThrottle()
        for n in 0..<(LoginThrottle.capacity + 500) { t.failed(name: "x", source: "s-\(n)", now: Double(n)) }
        #expect(t.sources.count <= LoginThrottle.capacity)
        #expect(t.sources["s-\(LoginThrottle.capacity + 499)"] != nil && t.sources["s-0"] == nil)
    }
}
