import CoinMechHarness
@testable import CoinMechTestSupport
import Foundation
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The dashboard against a browser or a script that means harm (docs/FLEET.md, "The
/// dashboard"), over raw HTTP as it came in: each client from a loopback address of its own.
@Suite("Fleet dashboard under attack: logins throttled, rights re-read, headers, idle connections closed", .serialized)
struct FleetDashboardSecurityTests {
    typealias Rig = FleetEndToEndTests.Rig

    /// Clients that send wrong passwords as fast as the dashboard answers, each from its own address.
    final class Guessers: Sendable {
        private let state = Mutex<(stop: Bool, sent: Int, statuses: [Int: Int])>((false, 0, [:]))
        private let ended = DispatchSemaphore(value: 0)
        let count: Int

        init(port: Int, sources: [String], names: [String]) {
            count = sources.count
            for (index, source) in sources.enumerated() {
                Thread { [self] in
                    let http = HTTPProbe(port: port, from: source)
                    var n = 0
                    while !self.state.withLock({ $0.stop }) {
                        n += 1
                        let status = (try? http.request("POST", "/login", form: "name=\(names[(index + n) % names.count])&password=guess-\(n)&next=/").status) ?? 0
                        self.state.withLock { $0.sent += 1; $0.statuses[status, default: 0] += 1 }
                    }
                    self.ended.signal()
                }.start()
            }
        }

        var sent: Int { state.withLock { $0.sent } }
        var statuses: [Int: Int] { state.withLock { $0.statuses } }

        func stop() {
            state.withLock { $0.stop = true }
            for _ in 0..<count where ended.wait(timeout: .now() + 60) == .timedOut { Issue.record("a guesser did not stop") }
        }
    }

    @Test("two clients guessing passwords, then fifty: every real login meanwhile gets in")
    func loginUnderGuessing() throws {
        let rig = try Rig("fleet-web-guess")
        try rig.waitUntilListening()
        try rig.setOperator("alice", role: "operator", password: "alice-password")
        try rig.setOperator("bob", role: "operator", password: "bob-password")
        let alice = HTTPProbe(port: rig.httpPort, from: "127.0.0.200")
        for (clients, logins) in [(2, 10), (50, 10)] {
            let guessers = Guessers(port: rig.httpPort, sources: (0..<clients).map { "127.0.1.\($0 + 1)" }, names: ["bob", "root", "admin", "nobody"])
            try rig.waitUntil("the guessing under way", timeout: 30) { guessers.sent >= clients * 2 }
            var statuses: [Int] = []
            for _ in 0..<logins { statuses.append(try alice.request("POST", "/login", form: "name=alice&password=alice-password&next=/").status) }
            guessers.stop()
            print("\(clients) guessing clients: \(guessers.sent) guesses answered \(guessers.statuses); alice's logins: \(statuses)")
            #expect(statuses.allSatisfy { $0 == 303 }, "\(clients) guessing clients: alice's logins got \(statuses)")
        }
    }

    @Test("only an admin acknowledges a ledger_conflict (it releases the ack hold) or events_missing; a demoted admin is an operator at the next request")
    func rightsReadEachRequest() throws {
        let rig = try Rig("fleet-web-rights")
        try rig.waitUntilListening()
        try rig.setOperator("alice", role: "admin", password: "alice-password")
        try rig.setOperator("bob", role: "operator", password: "bob-password")
        // A ledger replaced: seq 1 again, as another kind (F5).
        try rig.publish("s1/c-7/event", Rig.event("c-7", 1, kind: "decision"))
        try rig.waitUntil("the first copy stored", timeout: 20) { try rig.query("SELECT count(*) FROM events") == "1" }
        try rig.publish("s1/c-7/event", Rig.event("c-7", 1, kind: "coin"))
        try rig.waitUntil("the conflict held", timeout: 20) { try rig.query("SELECT count(*) FROM alerts WHERE kind = 'ledger_conflict' AND closed IS NULL") == "1" }
        let conflict = try rig.query("SELECT id FROM alerts WHERE kind = 'ledger_conflict'")
        let http = HTTPProbe(port: rig.httpPort)
        let bob = try rig.login(http, "bob", "bob-password")
        #expect(try http.request("POST", "/alerts/\(conflict)/ack", form: "", cookie: bob).status == 403, "an operator may not release the hold")
        #expect(try rig.query("SELECT closed IS NULL FROM alerts WHERE id = \(conflict)") == "t")
        let page = try http.request("GET", "/", cookie: bob)
        #expect(page.status == 200 && !page.body.contains("/alerts/\(conflict)/ack"), "no button an operator may not use")
        let alice = try rig.login(http, "alice", "alice-password")
        #expect(try http.request("POST", "/cabinet/c-7/commands", form: "name=status", cookie: alice).status == 303)
        // Demoted while logged in: an operator from the next request on.
        try rig.setOperator("alice", role: "operator", password: "alice-password")
        #expect(try http.request("POST", "/cabinet/c-7/commands", form: "name=status", cookie: alice).status == 403, "a demoted admin sends no command")
        #expect(try http.request("POST", "/alerts/\(conflict)/ack", form: "", cookie: alice).status == 403)
        try rig.setOperator("alice", role: "admin", password: "alice-password")
        #expect(try http.request("POST", "/alerts/\(conflict)/ack", form: "", cookie: alice).status == 303)
        #expect(try rig.query("SELECT acked_by FROM alerts WHERE id = \(conflict)") == "alice")
    }

    @Test("no framing, Secure cookies behind a TLS proxy that says so, log fields escaped, idle connections closed")
    func headersCookiesLogsIdle() throws {
        let rig = try Rig("fleet-web-headers", httpOptions: ", idle_timeout_s: 2")
        try rig.waitUntilListening()
        try rig.setOperator("alice", role: "operator", password: "alice-password")
        let http = HTTPProbe(port: rig.httpPort)
        let login = try http.request("GET", "/login")
        #expect(login.header("content-security-policy")?.contains("frame-ancestors 'none'") == true, "\(login.headers)")
        #expect(login.header("x-frame-options") == "DENY")
        let plain = try http.request("POST", "/login", form: "name=alice&password=alice-password&next=/")
        #expect(plain.status == 303 && plain.header("set-cookie")?.contains("Secure") == false, "plain HTTP on loopback: a Secure cookie would never come back")
        let proxied = try http.request("POST", "/login", form: "name=alice&password=alice-password&next=/", headers: [("X-Forwarded-Proto", "https")])
        #expect(proxied.status == 303 && proxied.header("set-cookie")?.contains("Secure") == true, "behind a TLS proxy: \(proxied.header("set-cookie") ?? "no cookie")")
        // A name that would forge a line of the log.
        _ = try http.request("POST", "/login", form: "name=mallory%0A2026-01-01T00:00:00+0000+info+coinmech-fleet:+forged&password=x")
        try rig.waitUntil("the failed login logged", timeout: 10) { rig.fleet.stderr.contains("mallory") }
        #expect(!rig.fleet.stderr.split(separator: "\n").contains { $0.hasPrefix("2026-01-01T00:00:00") }, "a forged log line")
        // A client that opens a connection and sends half a request is closed after the idle timeout.
        let fd = try #require(Loopback.connect(rig.httpPort))
        defer { close(fd) }
        let half = Array("GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n".utf8)
        _ = send(fd, half, half.count, Int32(MSG_NOSIGNAL))
        var timeout = timeval(tv_sec: 20, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var buffer = [UInt8](repeating: 0, count: 4096)
        let began = Date()
        var closed = false
        while Date().timeIntervalSince(began) < 20 {
            let n = recv(fd, &buffer, buffer.count, 0)
            if n == 0 { closed = true; break }
            if n < 0 { break }
        }
        #expect(closed, "the half-sent request's connection was still open after \(Int(Date().timeIntervalSince(began))) s")
    }
}
