import CoinMechHarness
import CoinMechCCTalk
import CoinMechSettings
@testable import CoinMechTestSupport
import CoinSimCore
import Foundation
import Testing

/// `coinsim --protocol cctalk` as a real child process on a real pty, driven by the host
/// engine through `CCTalkPTYHost`; the ledger it keeps must match coinsim's ground truth
/// event by event.
@Suite("coinsim --protocol cctalk driven by the host engine over a pty, judged by its ground truth", .serialized)
struct CCTalkSimulatorTests {
    struct Run {
        let truth: CCTalkGroundTruth
        let host: CCTalkPTYHost
    }

    /// Runs coinsim with `scenario`, drives it with a host until coinsim has written its truth;
    /// `during` may act on the host midway (stall it, restart it).
    func simulate(_ scenario: String, configuration: CCTalkHostConfiguration = CCTalkHostConfiguration(),
                  during: (CCTalkPTYHost) throws -> Void = { _ in }) throws -> Run {
        let dir = TestSupport.temporaryDirectory("cctalk")
        try scenario.write(toFile: "\(dir)/s.yaml", atomically: true, encoding: .utf8)
        let sim = try ChildProcess("coinsim", ["--protocol", "cctalk", "--scenario", "\(dir)/s.yaml", "--truth", "\(dir)/truth.json",
                                               "--linger-ms", "1500", "--host-timeout", "20"])
        let path = try #require(sim.readLine(), "coinsim printed no device path: \(sim.stderr)")
        let host = CCTalkPTYHost(path: path, configuration: configuration)
        try during(host)
        try host.run(timeout: 60) { _ in !sim.isRunning }
        #expect(sim.wait(timeout: 10) == 0, "coinsim failed: \(sim.stderr)")
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        let truth = try decoder.decode(CCTalkGroundTruth.self, from: Data(contentsOf: URL(fileURLWithPath: "\(dir)/truth.json")))
        return Run(truth: truth, host: host)
    }

    /// The ledger against the truth: credits are exactly the credit events the acceptor made
    /// after the host came and did not lose; backlog and lost events likewise. Sessions are
    /// epochs: the host saw every restart.
    func expectMatches(_ run: Run, sourceLocation: SourceLocation = #_sourceLocation) {
        typealias Key = CCTalkTestLedger.Key
        let truth = run.truth, ledger = run.host.ledger
        func key(_ event: CCTalkGroundTruth.Event) -> Key { Key(epoch: UInt64(event.session), number: event.event) }
        let credits = truth.events.filter { $0.a > 0 && !$0.beforeHost && !$0.lost }.map(key)
        #expect(ledger.doubled.isEmpty, "doubled: \(ledger.doubled)", sourceLocation: sourceLocation)
        #expect(ledger.creditKeys.sorted() == credits.sorted(), sourceLocation: sourceLocation)
        // Events pushed out of the buffer are named lost by the host; events a restart wiped
        // before anyone read them cannot be (the host records the restart).
        #expect(ledger.lost.sorted() == truth.events.filter { $0.lostTo == "overrun" && !$0.beforeHost }.map(key).sorted(),
                sourceLocation: sourceLocation)
        #expect(ledger.backlog.map { Key(epoch: $0.epoch, number: $0.number) } == truth.events.filter(\.beforeHost).map(key),
                sourceLocation: sourceLocation)
        // And the value: what the acceptor took, less what it lost before anyone could read it.
        let currencies = ["EU": "EUR", "GB": "GBP", "US": "USD"]
        let value = ledger.credits.reduce(into: [String: Int64]()) { sum, event in
            if let id = event.coinID, let value = id.nominalValue { sum[currencies[id.country ?? ""] ?? "?", default: 0] += value }
        }
        var expected = truth.creditedValue
        for (currency, lost) in truth.lostValue { expected[currency, default: 0] -= lost }
        #expect(value == expected.filter { $0.value != 0 }, sourceLocation: sourceLocation)
    }

    @Test("echo, lost replies, NAK, BUSY, bad checksums, a wrap, an overrun and a reset: credits match the truth")
    func faults() throws {
        let run = try simulate("""
            seed: 7
            coins: 36
            rate_per_s: 4
            currency: EUR
            others: {slug: 0.05, washer: 0.05, foreign: 0.05, foreign_currency: GBP}
            cctalk:
              echo: true
              counter: 245
              faults: {lost_reply: 0.08, nak: 0.08, busy: 0.08, bad_checksum: 0.08, overrun_at: [14], reset_at: [26]}
            """)
        // Under these faults the host's first intact read of the buffer can take more than a
        // second (each lost reply costs a timeout): the first coin waits for it, so the backlog
        // is what the buffer held before the host came.
        let truth = run.truth, host = run.host.host
        expectMatches(run)
        #expect(truth.outcomes.credited > 20)
        #expect(truth.events.filter { $0.lostTo == "overrun" }.count >= 2, "the overrun of 7 coins loses 2 or more")
        #expect(run.host.ledger.restarts.count == 1)
        #expect(truth.events.contains { $0.counter == 255 } && truth.events.contains { $0.counter == 1 && $0.session == 0 }, "no wrap")
        #expect(host.lineEchoes == true && truth.polls.echoBytes > 0)
        #expect(host.statistics.naks == truth.polls.naks && host.statistics.busies == truth.polls.busies)
        #expect(host.statistics.line.badChecksums == truth.polls.badChecksums)
        #expect(host.statistics.timeouts >= truth.polls.lostReplies)
        #expect(truth.polls.naks > 0 && truth.polls.busies > 0 && truth.polls.lostReplies > 0 && truth.polls.badChecksums > 0,
                "\(truth.polls)")
    }

    @Test("a host slow to its first poll: the coins wait for its first read of the buffer, so the backlog is what the buffer held before it came")
    func slowFirstPoll() throws {
        let run = try simulate("""
            seed: 5
            coins: 12
            rate_per_s: 4
            currency: EUR
            cctalk: {counter: 250}
            """) { host in
            // The line open and silent for two seconds, as a daemon starting on a loaded machine
            // leaves it: an acceptor coinsim plays must not take coins the host would read as
            // backlog (it cannot tell them from older events).
            try host.open()
            host.stall(seconds: 2)
        }
        expectMatches(run)
        #expect(run.truth.events.filter(\.beforeHost).count == 5, "counter 250: five events before the host")
        #expect(run.truth.sent.insertions == 12 && run.host.ledger.credits.count == run.truth.outcomes.credited)
    }

    @Test("a daemon restart and a stall long enough for the acceptor to inhibit itself, on a CRC-16 line")
    func restartAndStall() throws {
        var configuration = CCTalkHostConfiguration()
        configuration.checksum = .crc16
        let run = try simulate("""
            seed: 11
            coins: 30
            rate_per_s: 5
            currency: GBP
            cctalk: {checksum: crc16, start_ms: 1000}
            """, configuration: configuration) { host in
            try host.run(timeout: 2.5)
            host.stall(seconds: 2)  // coins keep coming; after a second the acceptor returns them
            try host.run(timeout: 1.5)
            host.restart()  // the ledger's state is all the new host knows
        }
        expectMatches(run)
        #expect(run.truth.outcomes.selfInhibited > 0, "no coin came while nobody polled")
        #expect(run.truth.polls.longestGapMs > 1000)
        // The buffer overran while nobody polled: the host names what it lost.
        #expect(run.host.ledger.credits.count == run.truth.outcomes.credited - run.truth.lostCredits)
    }

    @Test("a scenario error in the cctalk block exits 1 with the file, line and key")
    func badScenario() throws {
        let dir = TestSupport.temporaryDirectory("cctalk-bad")
        try "coins: 5\ncctalk:\n  checksum: crc32\n".write(toFile: "\(dir)/bad.yaml", atomically: true, encoding: .utf8)
        let sim = try ChildProcess("coinsim", ["--protocol", "cctalk", "--scenario", "\(dir)/bad.yaml"])
        #expect(sim.wait() == 1)
        #expect(sim.stderr.contains("\(dir)/bad.yaml:3: key 'cctalk.checksum': must be simple or crc16"), "\(sim.stderr)")
    }

    @Test("the cctalk block: defaults, coin positions from the currency, and errors that name the key", arguments: [
        ("cctalk: {coins: {\"17\": EU200A}}", "s.yaml:1: key 'cctalk.coins.17': coin positions are 1 to 16"),
        ("cctalk: {coins: {\"1\": EU2}}", "s.yaml:1: key 'cctalk.coins.1': a coin id is six characters, e.g. EU200A"),
        ("cctalk: {counter: 256}", "s.yaml:1: key 'cctalk.counter': must be 0 to 255"),
        ("cctalk: {faults: {overrun_coins: 5}}", "s.yaml:1: key 'cctalk.faults.overrun_coins': must be 6 to 50 (more than the buffer's 5)"),
        ("cctalk: {faults: {nak: 0.6, busy: 0.6}}", "s.yaml:1: key 'cctalk.faults': lost_reply, nak, busy and bad_checksum add up to more than 1"),
        ("cctalk: {address: 1}", "s.yaml:1: key 'cctalk.address': must be 2 to 255 (1 is the host's)"),
        ("cctalk: {echoes: true}", "s.yaml:1: key 'cctalk.echoes': unknown key"),
    ])
    func scenarioErrors(yaml: String, message: String) {
        #expect(throws: SettingsError.self) { try Scenario.parse(SettingsTable.parse(yaml, file: "s.yaml")) }
        do {
            _ = try Scenario.parse(SettingsTable.parse(yaml, file: "s.yaml"))
        } catch {
            #expect(error.description.hasPrefix(message), "\(error)")
        }
    }

    @Test("the shipped ccTalk scenario parses")
    func shipped() throws {
        let scenario = try Scenario.load(path: "\(TestSupport.packageRoot)/Simulators/scenarios/cctalk.yaml")
        #expect(scenario.name == "cctalk" && scenario.cctalk.echo)
        #expect(scenario.cctalk.coinIDs(currency: "EUR")[6] == CoinID("EU200A"))
    }

    @Test("default coin positions follow the currency's table")
    func defaults() throws {
        let scenario = try Scenario.parse(SettingsTable.parse("currency: EUR\ncctalk: {echo: true}\n", file: "s.yaml"))
        #expect(scenario.cctalk.echo && scenario.cctalk.checksum == .simple && scenario.cctalk.address == 2)
        let ids = scenario.cctalk.coinIDs(currency: "EUR")
        #expect(ids[1] == CoinID("EU001A") && ids[8] == CoinID("EU200A") && ids.count == 8)
        let custom = try Scenario.parse(SettingsTable.parse("cctalk: {coins: {\"3\": US025A, \"4\": \"......\"}}\n", file: "s.yaml"))
        #expect(custom.cctalk.coinIDs(currency: "USD") == [3: CoinID("US025A")])
    }
}
