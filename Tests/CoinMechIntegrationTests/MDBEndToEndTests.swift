import CoinMechClient
import CoinMechHarness
import CoinMechLedger
import CoinMechModel
@testable import CoinMechTestSupport
import CoinSimCore
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// coinmechd driving an MDB changer (`source.kind: mdb`) behind coinsim's adapter on a pty,
/// judged against coinsim's ground truth coin by coin: MDB numbers nothing, so the ledger's
/// credits join with the coins the changer kept, in order.
@Suite("MDB: coinmechd takes an MDB changer's coins into the ledger once each, and lets go of it cleanly", .serialized)
struct MDBEndToEndTests {
    /// Nickels and quarters credited; dimes are coins of the cabinet the chain does not credit.
    static let chain = """
        chain: [{name: usd, plugin: coin-id, config: {currency: USD, coins: {\
        USD5: {code: nickel, value: 5}, USD25: {code: quarter, value: 25}}}}]
        """

    /// The euro changer's six types: 5 to 50 cents go to tubes, 1 and 2 euro to the cash box.
    static let euroChain = """
        chain: [{name: euro, plugin: coin-id, config: {currency: EUR, coins: {\
        EUR5: {code: EUR_5c, value: 5}, EUR10: {code: EUR_10c, value: 10}, EUR20: {code: EUR_20c, value: 20}, \
        EUR50: {code: EUR_50c, value: 50}, EUR100: {code: EUR_1, value: 100}, EUR200: {code: EUR_2, value: 200}}}}]
        """

    /// A directory with coinmechd's configuration (an MDB source on `changer`) and a scenario.
    struct Rig {
        let dir: String
        let sim: ChildProcess

        /// `source`: more keys of the source table (`, alternative_payout: true`).
        init(_ name: String, scenario: String, simulatorArguments: [String], currency: String = "USD", chain: String = MDBEndToEndTests.chain,
             extra: String = "", source: String = "") throws {
            dir = TestSupport.temporaryDirectory(name)
            try """
                log_level: debug
                source: {kind: mdb, device: changer, poll_interval_ms: 50, currencies: [\(currency)]\(source)}
                state_dir: state
                runtime_dir: run
                cache_dir: cache
                \(extra)
                \(chain)
                """.write(toFile: "\(dir)/coinmechd.yaml", atomically: true, encoding: .utf8)
            try scenario.write(toFile: "\(dir)/scenario.yaml", atomically: true, encoding: .utf8)
            sim = try ChildProcess("coinsim", ["--protocol", "mdb", "--scenario", "\(dir)/scenario.yaml", "--link", "\(dir)/changer",
                                               "--truth", "\(dir)/truth.json"] + simulatorArguments)
            _ = try #require(sim.readLine(), "coinsim printed no device: \(sim.stderr)")
        }

        func startDaemon(environment: [String: String] = [:]) throws -> ChildProcess {
            try ChildProcess("coinmechd", ["--config", "\(dir)/coinmechd.yaml", "--plugin-dir", TestSupport.binDirectory], environment: environment)
        }

        func ledger() throws -> Ledger { try Ledger(directory: "\(dir)/state") }

        /// The credits on the ledger, oldest first.
        func accepts() throws -> [LedgerEvent] {
            try ledger().events(since: 0, limit: 100_000).filter { $0.source == "mdb" && $0.kind == "decision" && $0.verdict == "accept" }
        }

        func truth() throws -> MDBGroundTruth {
            let decoder = JSONDecoder()
            decoder.keyDecodingStrategy = .convertFromSnakeCase
            return try decoder.decode(MDBGroundTruth.self, from: Data(contentsOf: URL(fileURLWithPath: "\(dir)/truth.json")))
        }
    }

    @Test("each coin the changer kept is credited once, in order, across a kill -9; dimes, which the chain does not credit, are returned")
    func creditsOnceAcrossKill() throws {
        let rig = try Rig("mdb-e2e", scenario: "name: mdb-e2e\nseed: 7\ncoins: 40\nrate_per_s: 5\ncurrency: USD\nmix: {nickel: 1, dime: 1, quarter: 2}\nothers: {slug: 0.05}\n",
                          simulatorArguments: ["--linger-ms", "1500", "--host-timeout", "20"])
        var daemon = try rig.startDaemon()
        try TestSupport.waitUntil("8 coins credited", timeout: 60) { ((try? rig.accepts().count) ?? 0) >= 8 }
        daemon.signal(SIGKILL)
        #expect(daemon.wait(timeout: 20) == 137)
        daemon = try rig.startDaemon()
        // The changer lingers after its last coin while the daemon polls on: it reports them all.
        #expect(rig.sim.wait(timeout: 60) == 0, "coinsim: \(rig.sim.stderr)")
        let truth = try rig.truth()
        let kept = truth.coins.filter { $0.fate != "rejected" }.map { $0.valueMinor ?? -1 }
        try TestSupport.waitUntil("the kept coins credited", timeout: 20) { ((try? rig.accepts().count) ?? 0) >= kept.count - 1 }
        daemon.signal(SIGTERM)
        #expect(daemon.wait(timeout: 20) == 0, "\(daemon.stderr)")

        let accepts = try rig.accepts()
        // Once each: every coin number credited once.
        let numbers = accepts.compactMap(\.deviceSeq)
        #expect(numbers.count == accepts.count && Set(numbers).count == numbers.count, "a coin number credited twice")
        // In order, nothing the changer did not keep. MDB's POLL is destructive: the coins of
        // the one reply a kill -9 catches between the adapter and the ledger are lost
        // (docs/HARDWARE.md); at 5 coins a second and a POLL every 50 ms, one coin at most.
        let values = accepts.map { $0.valueMinor ?? 0 }
        let missing = Self.skipsToMatch(values, within: kept)
        #expect(missing != nil && missing! <= 1, "credited \(values) against kept \(kept)")
        #expect((0...25).contains(truth.keptValue["USD", default: 0] - values.reduce(0, +)), "credited \(values.reduce(0, +)) of \(truth.keptValue)")
        // Dimes: the chain credits none, so the daemon never enabled their coin type.
        let dimes = truth.coins.filter { $0.kind == "USD:dime" }
        #expect(!dimes.isEmpty && dimes.allSatisfy { $0.fate == "rejected" }, "\(dimes.map(\.fate))")
        #expect(accepts.allSatisfy { $0.denomination == "nickel" || $0.denomination == "quarter" })
        // The counter row: the last coin's number, and the tubes as the changer ended with them
        // (a coin lost at the kill shows in the tube count read after the restart).
        let row = try #require(try rig.ledger().acceptorCounter(source: "mdb", address: 0x08))
        #expect(row.eventNumber == UInt64(numbers.max() ?? 0))
        #expect(row.lastResults.map(Int.init) == truth.tubesAtEnd)
        #expect(truth.unreadableLines == 0)
    }

    @Test("stopped with SIGTERM, the daemon leaves the changer at COIN TYPE 0: it takes no coin nobody polls for")
    func stopLetsGo() throws {
        let rig = try Rig("mdb-stop", scenario: "name: mdb-stop\nseed: 8\ncoins: 0\nrate_per_s: 2\ncurrency: USD\nmix: {nickel: 1, quarter: 1}\n",
                          simulatorArguments: ["--host-timeout", "20"])
        let daemon = try rig.startDaemon()
        do {
            try TestSupport.waitUntil("3 coins credited", timeout: 60) { ((try? rig.accepts().count) ?? 0) >= 3 }
        } catch let timedOut as WaitTimedOut {
            throw TestFailure("\(timedOut)\n-- coinmechd:\n\(daemon.stderr.suffix(6000))\n-- coinsim:\n\(rig.sim.stderr.suffix(3000))")
        }
        daemon.signal(SIGTERM)
        #expect(daemon.wait(timeout: 20) == 0, "\(daemon.stderr)")
        rig.sim.signal(SIGTERM)
        #expect(rig.sim.wait(timeout: 20) == 0, "coinsim: \(rig.sim.stderr)")
        let truth = try rig.truth()
        #expect(truth.enabledAtEnd == 0, "the changer still takes coin types \(String(truth.enabledAtEnd, radix: 16))")
        #expect(truth.connections.hangups == 1)
        // A coin kept after the last POLL waits in the changer for the next start's drain.
        let kept = truth.coins.filter { $0.fate != "rejected" }.map { $0.valueMinor ?? -1 }
        let missing = Self.skipsToMatch(try rig.accepts().map { $0.valueMinor ?? 0 }, within: kept)
        #expect(missing != nil && missing! <= 1)
    }

    /// The ledger's lost POLL replies: while the changer was there, and at its hang-up (a POLL
    /// in flight when the simulator ended, recorded with the `source_lost` that follows it).
    static func lostReplies(_ rig: Rig) throws -> (whileConnected: Int, atHangUp: Int) {
        let events = try rig.ledger().events(since: 0, limit: 100_000).filter { $0.source == "mdb" }
        var counts = (whileConnected: 0, atHangUp: 0)
        for (index, event) in events.enumerated() where event.kind == "acceptor_reply_lost" {
            let next = events.indices.contains(index + 1) ? events[index + 1] : nil
            if next?.kind == "source_lost" { counts.atHangUp += 1 } else { counts.whileConnected += 1 }
        }
        return counts
    }

    @Test("a POLL reply lost on the line is on the ledger and its coins are not credited; a possible credited coin removal is a tamper, a coin jam a jam")
    func lostReplyAndStatuses() throws {
        let rig = try Rig("mdb-faults", scenario: """
            name: mdb-faults
            seed: 9
            coins: 20
            rate_per_s: 5
            currency: EUR
            mix: {EUR_10c: 1, EUR_50c: 1, EUR_1: 1, EUR_2: 1}
            mdb: {faults: {lost_poll_reply_at: [6], status_at: {"10": 13, "14": 12}}}
            """, simulatorArguments: ["--linger-ms", "1500", "--host-timeout", "20"], currency: "EUR", chain: Self.euroChain)
        let daemon = try rig.startDaemon()
        #expect(rig.sim.wait(timeout: 60) == 0, "coinsim: \(rig.sim.stderr)")
        let truth = try rig.truth()
        #expect(truth.lostPollReplies == 1 && truth.statusesReported == [13, 12])
        let reportedCoins = truth.coins.filter { $0.fate != "rejected" && $0.replyLost != true }
        let reportable = reportedCoins.map { $0.valueMinor ?? -1 }
        #expect(truth.coins.contains { $0.replyLost == true })
        try TestSupport.waitUntil("the reported coins credited", timeout: 20) { ((try? rig.accepts().count) ?? 0) >= reportable.count }
        // status says what was lost, and shows the tubes as the changer counted them. The
        // simulator has ended: a POLL the daemon wrote as it hung up went unanswered too, and
        // counts (what it carried is unknown), so the lost replies are the ledger's, read after.
        try TestSupport.waitUntil("the daemon saw the simulator hang up", timeout: 20) {
            try rig.ledger().events(since: 0, limit: 100_000).contains { $0.source == "mdb" && $0.kind == "source_lost" }
        }
        let changer = try #require(try CoinMechConnection(path: "\(rig.dir)/run/coinmechd.sock").request("status")["acceptor"])
        let lostSoFar = try Self.lostReplies(rig)
        #expect(lostSoFar.whileConnected == truth.lostPollReplies && lostSoFar.atHangUp <= 1, "\(lostSoFar)")
        let lost = lostSoFar.whileConnected + lostSoFar.atHangUp
        #expect(changer["kind"] == "mdb" && changer["lost_replies"]?.int == Int64(lost))
        #expect(changer["alarm"]?.string?.hasPrefix("\(lost) POLL repl") == true, "\(changer)")
        let ids = (changer["coins"]?.object ?? [:]).compactMap { entry -> (Int, String)? in
            guard let type = Int(entry.key), let id = entry.value.string else { return nil }
            return (type, id)
        }
        #expect(ids.count == truth.typeValues.count)
        for (type, id) in ids { #expect(changer["tubes"]?[id]?.int == Int64(truth.tubesAtEnd[type]), "\(id)") }
        let tubes = try ChildProcess("coinctl", ["tubes", "--socket", "\(rig.dir)/run/coinmechd.sock"])
        #expect(tubes.wait() == 0)
        let table = String(decoding: tubes.readToEnd(), as: UTF8.self)
        #expect(table.contains("EUR10") && table.contains("\(truth.tubesAtEnd[1])"), "\(table)")
        try Self.expectPayoutPlans(socket: "\(rig.dir)/run/coinmechd.sock", tubes: truth.tubesAtEnd, values: truth.typeValues)
        daemon.signal(SIGTERM)
        #expect(daemon.wait(timeout: 20) == 0, "\(daemon.stderr)")

        // Exactly the coins whose reply arrived, in order, each where the changer put it.
        let accepts = try rig.accepts()
        #expect(accepts.map { $0.valueMinor ?? 0 } == reportable)
        let routings = accepts.map { event -> String in
            let detail = (try? JSONSerialization.jsonObject(with: Data((event.detail ?? "{}").utf8))) as? [String: String]
            return detail?["routing"] ?? "?"
        }
        #expect(routings == reportedCoins.map(\.fate))
        #expect(Set(routings) == ["tube", "cash_box"], "cents go to the tubes, euros to the cash box")
        let events = try rig.ledger().events(since: 0, limit: 100_000).filter { $0.source == "mdb" }
        #expect(try Self.lostReplies(rig).whileConnected == truth.lostPollReplies)
        let statuses = events.filter { $0.kind == "mech_status" }.compactMap(\.detail)
        #expect(statuses.count == 2, "\(statuses)")
        #expect(statuses.contains { $0.contains("tamper") && $0.contains("possible credited coin removal") }, "\(statuses)")
        #expect(statuses.contains { $0.contains("jam") && $0.contains("coin jam") }, "\(statuses)")
    }

    @Test("a full ledger: the changer is held at COIN TYPE 0 and returns every coin; nothing is credited unrecorded or twice")
    func ledgerFull() throws {
        let rig = try Rig("mdb-full", scenario: "name: mdb-full\nseed: 12\ncoins: 120\nrate_per_s: 8\ncurrency: USD\nmix: {nickel: 1, quarter: 1}\n",
                          simulatorArguments: ["--linger-ms", "500", "--host-timeout", "20"], extra: "ledger: {max_size_mb: 0.0905}")
        let daemon = try rig.startDaemon()
        var connection: CoinMechConnection?
        try TestSupport.waitUntil("the daemon's socket", timeout: 20) {
            connection = try? CoinMechConnection(path: "\(rig.dir)/run/coinmechd.sock")
            return connection != nil
        }
        let client = connection!
        try TestSupport.waitUntil("the ledger failing and the changer held", timeout: 60) {
            let status = try client.request("status")
            return status["ledger"] == "failing" && status["acceptor"]?["held_for_ledger"] == true && status["acceptor"]?["accepting"] == false
        }
        #expect(rig.sim.wait(timeout: 60) == 0, "coinsim: \(rig.sim.stderr)")
        daemon.signal(SIGTERM)
        #expect(daemon.wait(timeout: 20) == 0, "\(daemon.stderr)")
        let truth = try rig.truth()
        let kept = truth.coins.filter { $0.fate != "rejected" }.map { $0.valueMinor ?? -1 }
        let accepts = try rig.accepts()
        let numbers = accepts.compactMap(\.deviceSeq)
        #expect(Set(numbers).count == numbers.count, "a coin number credited twice")
        // In order, nothing the changer did not keep; what it kept before COIN TYPE 0 reached
        // it waits in the daemon for a ledger that can write: a handful at most.
        let missing = Self.skipsToMatch(accepts.map { $0.valueMinor ?? 0 }, within: kept)
        #expect(missing != nil && missing! <= 5, "credited \(accepts.count) of \(kept.count) kept")
        // Once held, the changer took no more coins: it returned them.
        #expect(truth.outcomes.rejected > kept.count, "\(truth.outcomes)")
        // Said loudly once per outage, not at every poll (the retries are debug lines).
        let outages = OutageLog(daemon.stderr, failure: "could not record the acceptor's events",
                                recovery: "the acceptor's events are recorded again")
        #expect(outages.saidOncePerOutage, "\(daemon.stderr)")
    }

    /// `payout_plan` against what the changer's tubes hold at the end (coinsim's truth): an
    /// exact plan within the tubes where one exists, by every combination the tubes allow; the
    /// nearest amounts otherwise; another currency refused; `coinctl payout-plan` says it.
    static func expectPayoutPlans(socket: String, tubes: [Int], values: [Int64]) throws {
        let client = try CoinMechConnection(path: socket)
        var payable: Set<Int64> = [0]
        for (type, value) in values.enumerated() where tubes[type] > 0 {
            payable = payable.union(payable.flatMap { reached in (1...tubes[type]).map { reached + value * Int64($0) } })
        }
        for amount in [Int64(3), 35, 65, 185, 2_000] {
            let plan = try client.request(.payoutPlan(amountMinor: amount, currency: "EUR"))
            #expect(plan["payable"]?.bool == payable.contains(amount), "\(amount): \(plan)")
            if payable.contains(amount) {
                let coins = plan["coins"]?.array ?? []
                let paid = coins.reduce(Int64(0)) { $0 + ($1["value_minor"]?.int ?? 0) * ($1["count"]?.int ?? 0) }
                #expect(paid == amount, "\(plan)")
                for coin in coins {
                    let type = values.firstIndex(of: coin["value_minor"]?.int ?? -1) ?? 0
                    #expect((coin["count"]?.int ?? 0) <= Int64(tubes[type]), "more coins than the tube holds: \(plan)")
                }
            } else {
                #expect(plan["reason"] == "cannot_pay_exact")
                #expect(plan["nearest_below"]?.int == payable.filter { $0 < amount }.max())
            }
        }
        #expect(throws: ClientError.self) { try client.request(.payoutPlan(amountMinor: 35, currency: "USD")) }
        let ctl = try ChildProcess("coinctl", ["payout-plan", "0.35", "--socket", socket])
        #expect(ctl.wait() == 0)
        #expect(String(decoding: ctl.readToEnd(), as: UTF8.self).hasPrefix("EUR 0.35 would be paid as "))
        let bad = try ChildProcess("coinctl", ["payout-plan", "0.355", "--socket", socket])
        #expect(bad.wait() == 64)
    }

    /// How many of `kept` must be skipped for `credited` to be it in order (nil: not a
    /// subsequence, so something was credited that the changer did not keep, or out of order).
    static func skipsToMatch(_ credited: [Int64], within kept: [Int64]) -> Int? {
        var index = 0
        for value in credited {
            while index < kept.count && kept[index] != value { index += 1 }
            guard index < kept.count else { return nil }
            index += 1
        }
        return kept.count - credited.count
    }
}
