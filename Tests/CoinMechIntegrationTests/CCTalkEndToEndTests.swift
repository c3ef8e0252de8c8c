import CoinMechClient
import CoinMechHarness
import CoinMechLedger
import CoinMechProtocol
@testable import CoinMechTestSupport
import CoinSimCore
import Foundation
import Testing

/// A real coinmechd driving a real `coinsim --protocol cctalk` on a pty; the ledger joined
/// with coinsim's ground truth event by event: every coin the acceptor took and reported is
/// credited once, at its value, and the socket's totals say so.
@Suite("ccTalk end to end: coinsim --protocol cctalk → coinmechd → ledger and socket", .serialized)
struct CCTalkEndToEndTests {
    static let chain = FixtureChains.euroCoinIDs

    /// (session, event) in the simulator; (epoch, device_seq) on the ledger.
    struct Key: Hashable, Comparable, CustomStringConvertible {
        var epoch: Int64
        var number: Int64
        static func < (a: Key, b: Key) -> Bool { (a.epoch, a.number) < (b.epoch, b.number) }
        var description: String { "\(epoch)/\(number)" }
    }

    /// One test's directory, with coinsim playing the acceptor on a pty and coinmechd on it.
    struct Rig {
        let dir: String
        let sim: ChildProcess
        var daemon: ChildProcess
        var socket: String { "\(dir)/run/coinmechd.sock" }

        /// Writes the daemon's configuration and the scenario, starts coinsim (its ground truth
        /// in truth.json) and coinmechd, and waits for the daemon's socket.
        init(_ name: String, config: String, scenario: String, environment: [String: String] = [:]) throws {
            dir = TestSupport.temporaryDirectory(name)
            try config.write(toFile: "\(dir)/coinmechd.yaml", atomically: true, encoding: .utf8)
            try scenario.write(toFile: "\(dir)/scenario.yaml", atomically: true, encoding: .utf8)
            sim = try ChildProcess("coinsim", ["--protocol", "cctalk", "--scenario", "\(dir)/scenario.yaml", "--link", "\(dir)/acceptor",
                                               "--truth", "\(dir)/truth.json", "--linger-ms", "1500", "--host-timeout", "20"])
            _ = try #require(sim.readLine(), "coinsim printed no device: \(sim.stderr)")
            daemon = try Self.startDaemon(dir, environment: environment)
            let socket = "\(dir)/run/coinmechd.sock"
            try TestSupport.waitUntil("the daemon's socket", timeout: 20) { FileManager.default.fileExists(atPath: socket) }
        }

        static func startDaemon(_ dir: String, environment: [String: String] = [:]) throws -> ChildProcess {
            try ChildProcess("coinmechd", ["--config", "\(dir)/coinmechd.yaml", "--plugin-dir", TestSupport.binDirectory], environment: environment)
        }

        /// What coinsim says happened, once it has finished.
        func truth() throws -> CCTalkGroundTruth {
            let decoder = JSONDecoder()
            decoder.keyDecodingStrategy = .convertFromSnakeCase
            return try decoder.decode(CCTalkGroundTruth.self, from: Data(contentsOf: URL(fileURLWithPath: "\(dir)/truth.json")))
        }
    }

    @Test("backlog, a counter wrap, an overrun, a reset, a power cycle and kill -9 mid-run: each coin credited once, totals match")
    func wrapResetAndKill() throws {
        // Counter 250 at the start: five events before the daemon came (backlog), then 251…255
        // and the wrap to 1. Insertion 8 is an overrun (7 coins between two polls), 18 a reset,
        // 30 a power cycle.
        var rig = try Rig("cctalk-e2e", config: """
            log_level: debug
            source: {kind: cctalk, device: acceptor, address: 2, checksum: simple8, poll_interval_ms: 200}
            state_dir: state
            runtime_dir: run
            cache_dir: cache
            \(Self.chain)
            """, scenario: """
            name: cctalk-e2e
            seed: 18
            coins: 44
            rate_per_s: 4
            currency: EUR
            mix: {EUR_5c: 1, EUR_10c: 2, EUR_20c: 3, EUR_50c: 3, EUR_1: 4, EUR_2: 3}
            others: {slug: 0.05, foreign: 0.05, foreign_currency: GBP}
            cctalk:
              echo: true
              counter: 250
              coins: {"1": EU005A, "2": EU010A, "3": EU020A, "4": EU050A, "5": EU100A, "6": EU200A}
              faults: {lost_reply: 0.02, nak: 0.01, busy: 0.01, overrun_at: [8], reset_at: [18], power_cycle_at: [30]}
            """)
        let dir = rig.dir, socket = rig.socket
        var client = try CoinMechConnection(path: socket)
        // After the reset: a daemon that did not keep its counter would give the new session's
        // events the old session's numbers, and take the buffer it finds for backlog.
        try TestSupport.waitUntil("the reset seen and coins credited after it", timeout: 40) {
            let acceptor = try client.request("status")["acceptor"]
            return (acceptor?["restarts"]?.int ?? 0) >= 1 && (acceptor?["credited"]?.int ?? 0) >= 16
        }
        rig.daemon.signal(SIGKILL)
        #expect(rig.daemon.wait(timeout: 20) == 137)
        rig.daemon = try Rig.startDaemon(dir)
        #expect(rig.sim.wait(timeout: 60) == 0, "coinsim: \(rig.sim.stderr)")
        let truth = try rig.truth()

        // What the acceptor took and reported (not lost before a reply carried it), after the daemon came.
        func key(_ event: CCTalkGroundTruth.Event) -> Key { Key(epoch: Int64(event.session), number: Int64(event.event)) }
        let credits = truth.events.filter { (1...16).contains($0.a) && !$0.beforeHost && !$0.lost }.map(key)
        var expected = truth.creditedValue
        for (currency, lost) in truth.lostValue { expected[currency, default: 0] -= lost }
        expected = expected.filter { $0.value != 0 }
        // The socket's totals, from the restarted daemon, once it has read the last events.
        try TestSupport.waitUntil("the restarted daemon's socket", timeout: 20) { (try? CoinMechConnection(path: socket)) != nil }
        client = try CoinMechConnection(path: socket)
        try TestSupport.waitUntil("the totals to reach \(expected)", timeout: 20) {
            (try client.request("totals")["current_value"]?["EUR"]?.int ?? 0) >= expected["EUR", default: 0]
        }
        let totals = try client.request("totals")
        let status = try client.request("status")
        #expect(rig.daemon.wait(timeout: 0.01) == nil, "the daemon is still running")
        rig.daemon.signal(SIGTERM)
        #expect(rig.daemon.wait(timeout: 20) == 0, "\(rig.daemon.stderr)")

        let events = try Ledger(directory: "\(dir)/state").events(since: 0, limit: 1_000_000).filter { $0.source == "cctalk" }
        let accepted = events.filter { $0.kind == "decision" && $0.verdict == "accept" }.map { Key(epoch: $0.epoch!, number: $0.deviceSeq!) }
        // Exactly once each.
        #expect(accepted.count == Set(accepted).count, "doubled: \(accepted.count - Set(accepted).count)")
        #expect(accepted.sorted() == credits.sorted(), "ledger − truth: \(Set(accepted).subtracting(credits).sorted()); truth − ledger: \(Set(credits).subtracting(accepted).sorted())")
        let coinValue = events.filter { $0.kind == "coin" }.reduce(into: [String: Int64]()) { $0[$1.currency!, default: 0] += $1.valueMinor! }
        #expect(coinValue == expected)
        #expect(totals["current_value"]?["EUR"]?.int == expected["EUR"])
        // The backlog is recorded, not credited; what the overrun pushed out is named lost, and
        // status raises it.
        let backlog = events.filter { $0.kind == "cctalk_backlog" }.map { Key(epoch: $0.epoch!, number: $0.deviceSeq!) }
        #expect(backlog == truth.events.filter(\.beforeHost).map(key))
        #expect(!backlog.isEmpty)
        let overrun = Set(truth.events.filter { $0.lostTo == "overrun" && !$0.beforeHost }.map(key))
        #expect(overrun.count >= 2, "the scenario's overrun loses events")
        let lost = Set(events.filter { $0.kind == "cctalk_lost" }.flatMap { event -> [Key] in
            let detail = (try? JSONSerialization.jsonObject(with: Data((event.detail ?? "{}").utf8))) as? [String: String] ?? [:]
            let first = Int64(detail["first"] ?? "") ?? 0, last = Int64(detail["last"] ?? "") ?? -1
            return (first...max(first, last)).map { Key(epoch: event.epoch!, number: $0) }
        })
        #expect(overrun.isSubset(of: lost), "every event the overrun pushed out is named lost")
        // Until a restarted acceptor has given its serial number again the host records no
        // buffer; the acceptor is inhibited then, so what it may miss are only error events
        // (coins returned as inhibited), never a credit.
        let byKey = Dictionary(truth.events.map { (key($0), $0) }, uniquingKeysWith: { a, _ in a })
        for missed in lost.subtracting(overrun) { #expect(byKey[missed]?.a == 0, "\(missed) was named lost but is a credit the acceptor reported") }
        #expect(status["acceptor"]?["lost_events"]?.int == Int64(lost.count))
        #expect(status["acceptor"]?["alarm"] != nil)
        // The scenario did what it says: a wrap in the first session, credited; a reset and a power cycle seen as restarts.
        let wrapped = truth.events.filter { $0.session == 0 && $0.event > 255 && (1...16).contains($0.a) && !$0.lost }.map(key)
        #expect(!wrapped.isEmpty && Set(wrapped).isSubset(of: Set(accepted)))
        #expect(truth.sessions.resets == 1 && truth.sessions.powerCycles == 1)
        #expect(Set(accepted.map(\.epoch)) == [0, 1, 2])
        // The first coin of each new session (counter 0 → 1) is credited.
        for session in [1, 2] {
            if let first = truth.events.first(where: { $0.session == session && (1...16).contains($0.a) && !$0.lost }) {
                #expect(accepted.contains(key(first)), "the first coin after restart \(session)")
            }
        }
        #expect(events.contains { $0.kind == "acceptor_identified" })
    }

    // Until the host opened only the positions whose coin ids the chain credits, the acceptor
    // took every 1 cent here (position 7, which the coin-id map lacks) into the cash box and
    // the ledger recorded it `coin_uncredited`: the customer lost it.
    @Test("a watcher sees each credit once, as the ledger has it; a coin the chain cannot credit and the operator's inhibit both send coins back uncredited")
    func watchAndInhibit() throws {
        let rig = try Rig("cctalk-watch", config: FixtureDaemon.configuration(source: "{kind: cctalk, device: acceptor}", chain: Self.chain, logLevel: "debug"), scenario: """
            seed: 3
            coins: 40
            rate_per_s: 5
            currency: EUR
            mix: {EUR_1c: 1, EUR_10c: 2, EUR_50c: 2, EUR_1: 2, EUR_2: 2}
            cctalk:
              echo: true
              coins: {"1": EU005A, "2": EU010A, "3": EU020A, "4": EU050A, "5": EU100A, "6": EU200A, "7": EU001A}
            """)
        let socket = rig.socket, sim = rig.sim, daemon = rig.daemon
        let watcher = try CoinMechConnection(path: socket)
        let since = try #require(try watcher.request("subscribe")["since"]?.int)
        let control = try CoinMechConnection(path: socket)
        try TestSupport.waitUntil("5 coins credited", timeout: 20) { (try control.request("status")["acceptor"]?["credited"]?.int ?? 0) >= 5 }
        // Inhibited: master inhibit on, confirmed by the device; coins meanwhile come back.
        _ = try control.request("inhibit", ["on": true])
        try TestSupport.waitUntil("the acceptor inhibited", timeout: 10) { try control.request("status")["acceptor"]?["accepting"] == false }
        // Until the acceptor has returned some coins (error events: inhibited coin).
        try TestSupport.waitUntil("coins returned while inhibited", timeout: 20) {
            (try control.request("status")["acceptor"]?["error_events"]?.int ?? 0) >= 3
        }
        _ = try control.request("inhibit", ["on": false])
        try TestSupport.waitUntil("the acceptor accepting again", timeout: 10) { try control.request("status")["acceptor"]?["accepting"] == true }
        #expect(sim.wait(timeout: 60) == 0, "coinsim: \(sim.stderr)")
        let truth = try rig.truth()
        // The chain maps positions 1–6: the acceptor's 1 cent (position 7) stays closed, and the
        // acceptor gives every 1 cent back instead of taking it.
        let taken = truth.events.filter { (1...16).contains($0.a) && !$0.beforeHost && !$0.lost }
        let owed = taken.filter { $0.a <= 6 }.count, uncredited = taken.count - owed
        #expect(uncredited == 0, "the acceptor took \(uncredited) coins of a position the chain cannot credit")
        let cents = truth.coins.filter { $0.position == 7 }
        #expect(!cents.isEmpty, "no 1 cent inserted: the test shows nothing")
        #expect(cents.allSatisfy { $0.outcome == "inhibited" }, "\(cents.map(\.outcome))")
        try TestSupport.waitUntil("\(owed) coins credited and \(uncredited) not", timeout: 20) {
            let acceptor = try control.request("status")["acceptor"]
            return (acceptor?["credited"]?.int ?? 0) >= Int64(owed) && (acceptor?["uncredited"]?.int ?? 0) >= Int64(uncredited)
        }
        let ledger = try Ledger(directory: "\(rig.dir)/state")
        let recorded = try ledger.events(since: since, limit: 100_000).filter { !$0.isPendingAccept }
        // Everything recorded since the subscription reached the watcher, once, in order.
        var seen: [Int64] = []
        while seen.count < recorded.count, let event = try watcher.nextEvent(timeout: 5) {
            if let seq = event["seq"]?.int { seen.append(seq) }
        }
        #expect(seen == recorded.map(\.seq))
        #expect(recorded.filter { $0.kind == "coin" }.count == owed)
        #expect(recorded.filter { $0.kind == "coin_uncredited" }.count == uncredited)
        #expect(recorded.filter { $0.kind == "coin" }.reduce(0) { $0 + $1.valueMinor! } == truth.creditedValue["EUR", default: 0] - Int64(uncredited))
        // What the acceptor returned while inhibited is on the ledger as its error events, not credit.
        #expect(truth.outcomes.inhibited >= 3)
        #expect(recorded.filter { $0.kind == "cctalk_error" && ($0.detail ?? "").contains("\"code\":\"2\"") }.count == truth.outcomes.inhibited)
        #expect(recorded.contains { $0.kind == "inhibit" })
        daemon.signal(SIGTERM)
        #expect(daemon.wait(timeout: 20) == 0, "\(daemon.stderr)")
    }

    @Test("a full ledger: the acceptor is held in master inhibit and returns every coin; nothing is credited unrecorded or twice")
    func ledgerFull() throws {
        let rig = try Rig("cctalk-full", config: """
            log_level: info
            source: {kind: cctalk, device: acceptor}
            state_dir: state
            runtime_dir: run
            cache_dir: cache
            ledger: {max_size_mb: 0.0905}
            \(Self.chain)
            """, scenario: """
            seed: 4
            coins: 120
            rate_per_s: 8
            currency: EUR
            mix: {EUR_10c: 1, EUR_1: 1}
            cctalk: {echo: true, coins: {"2": EU010A, "5": EU100A}}
            """)
        let socket = rig.socket, sim = rig.sim, daemon = rig.daemon
        let client = try CoinMechConnection(path: socket)
        try TestSupport.waitUntil("the ledger failing and the acceptor held", timeout: 40) {
            let status = try client.request("status")
            return status["ledger"] == "failing" && status["acceptor"]?["held_for_ledger"] == true && status["acceptor"]?["accepting"] == false
        }
        #expect(sim.wait(timeout: 60) == 0, "coinsim: \(sim.stderr)")
        daemon.signal(SIGTERM)
        #expect(daemon.wait(timeout: 20) == 0, "\(daemon.stderr)")
        let truth = try rig.truth()
        let owed = Set(truth.events.filter { (1...16).contains($0.a) && !$0.beforeHost && !$0.lost }.map { Key(epoch: Int64($0.session), number: Int64($0.event)) })
        let credited = try Ledger(directory: "\(rig.dir)/state").events(since: 0, limit: 100_000).filter { $0.kind == "coin" }
            .map { Key(epoch: $0.epoch!, number: $0.deviceSeq!) }
        #expect(credited.count == Set(credited).count, "doubled")
        #expect(Set(credited).isSubset(of: owed), "credited what the acceptor did not take")
        // Once a write failed the acceptor took no more coins: it returned them (inhibited).
        #expect(truth.outcomes.inhibited > 0 && truth.outcomes.inhibited > truth.outcomes.credited)
        // What it took before master inhibit reached it waits in the daemon (and the device's
        // buffer) for a ledger that can write: a handful at most, never credited unrecorded.
        #expect(owed.subtracting(credited).count <= 5, "taken but unrecorded: \(owed.subtracting(credited).sorted())")
        // Said loudly once per outage, not at every poll.
        let outages = OutageLog(daemon.stderr, failure: "could not record the acceptor's events",
                                recovery: "the acceptor's events are recorded again")
        #expect(outages.saidOncePerOutage, "\(daemon.stderr)")
    }

    @Test("a chain with no coin-id link keeps every position closed; a reload that adds one opens them, and coins are credited")
    func positionsFollowTheChain() throws {
        let head = """
            log_level: info
            source: {kind: cctalk, device: acceptor, currencies: [EUR]}
            state_dir: state
            runtime_dir: run
            cache_dir: cache
            """
        let rig = try Rig("cctalk-reload", config: head + "\nchain:\n  - plugin: sanity\n", scenario: """
            seed: 9
            coins: 40
            rate_per_s: 4
            currency: EUR
            mix: {EUR_10c: 1, EUR_1: 1, EUR_2: 1}
            cctalk: {echo: true, coins: {"2": EU010A, "5": EU100A, "6": EU200A}}
            """)
        let dir = rig.dir, socket = rig.socket, sim = rig.sim, daemon = rig.daemon
        let client = try CoinMechConnection(path: socket)
        // Nobody could credit a coin: the acceptor takes none (it returns them: inhibited coins).
        try TestSupport.waitUntil("coins returned with every position closed", timeout: 30) {
            let acceptor = try client.request("status")["acceptor"]
            return acceptor?["enabled_positions"] == "none" && (acceptor?["error_events"]?.int ?? 0) >= 3
        }
        #expect(try client.request("status")["acceptor"]?["credited"] == 0)
        try (head + "\n" + Self.chain + "\n").write(toFile: "\(dir)/coinmechd.yaml", atomically: true, encoding: .utf8)
        daemon.signal(SIGHUP)
        try TestSupport.waitUntil("the positions open after the reload and coins credited", timeout: 30) {
            let acceptor = try client.request("status")["acceptor"]
            return acceptor?["enabled_positions"] == "2,5,6" && (acceptor?["credited"]?.int ?? 0) >= 3
        }
        #expect(sim.wait(timeout: 60) == 0, "coinsim: \(sim.stderr)")
        daemon.signal(SIGTERM)
        #expect(daemon.wait(timeout: 20) == 0, "\(daemon.stderr)")
        let truth = try rig.truth()
        let owed = truth.events.filter { (1...16).contains($0.a) && !$0.beforeHost && !$0.lost }.map { Key(epoch: Int64($0.session), number: Int64($0.event)) }
        let events = try Ledger(directory: "\(dir)/state").events(since: 0, limit: 100_000)
        let credited = events.filter { $0.kind == "coin" }.map { Key(epoch: $0.epoch!, number: $0.deviceSeq!) }
        #expect(credited.sorted() == owed.sorted(), "every coin the acceptor took was taken after the reload, and credited once")
        #expect(!events.contains { $0.kind == "coin_uncredited" })
        let reload = try #require(events.first { $0.kind == "reload" }?.seq)
        #expect(events.filter { $0.kind == "coin" }.allSatisfy { $0.seq > reload })
        #expect(truth.outcomes.inhibited >= 3)
    }
}
