import CoinMechClient
import CoinMechHarness
import CoinMechLedger
import CoinMechModel
import CoinMechProtocol
@testable import CoinMechTestSupport
import CoinSimCore
import Foundation
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// coinmechd paying change from coinsim's MDB changer, judged against the changer's own
/// account (coinsim's truth: every coin that left a tube): the ledger's payouts equal what the
/// changer paid, a request id is paid once, and a daemon killed mid-payout settles from the
/// tubes, never paying again. USD changer: type 0 nickel, 1 dime, 2 quarter, 3 half dollar in
/// tubes holding 18, 10, 8 and 5 at power-up.
@Suite("MDB payouts: journalled before any coin moves, equal to what the changer paid, never paid twice", .serialized)
struct MDBPayoutEndToEndTests {
    typealias Rig = MDBEndToEndTests.Rig

    /// A changer that takes a nickel a second until stopped (the tubes move a little).
    /// `valuePayouts`: the daemon is told to use level 3's alternative payout where offered.
    static func rig(_ name: String, faults: String = "", valuePayouts: Bool = false) throws -> Rig {
        try Rig(name, scenario: "name: \(name)\nseed: 21\ncoins: 0\nrate_per_s: 1\ncurrency: USD\nmix: {nickel: 1}\n\(faults)",
                simulatorArguments: ["--host-timeout", "30"], source: valuePayouts ? ", alternative_payout: true" : "")
    }

    static func connect(_ rig: Rig) throws -> CoinMechConnection {
        var connection: CoinMechConnection?
        try TestSupport.waitUntil("the changer set up", timeout: 30) {
            connection = connection ?? (try? CoinMechConnection(path: "\(rig.dir)/run/coinmechd.sock"))
            return (try? connection?.request(.payoutPlan(amountMinor: 5, currency: nil)))?["payable"] == true
        }
        return connection!
    }

    static func payout(_ client: CoinMechConnection, _ amount: Int64, _ id: String) throws -> JSON {
        try client.request(.payout(amountMinor: amount, currency: nil, requestID: id), timeout: 30)
    }

    /// Stops the daemon and the changer; the changer's truth.
    static func finish(_ rig: Rig, _ daemon: ChildProcess) throws -> MDBGroundTruth {
        daemon.signal(SIGTERM)
        #expect(daemon.wait(timeout: 20) == 0, "\(daemon.stderr)")
        rig.sim.signal(SIGTERM)
        #expect(rig.sim.wait(timeout: 20) == 0, "coinsim: \(rig.sim.stderr)")
        return try rig.truth()
    }

    /// The ledger's payouts: each settled one's paid value, and the events' kinds in order.
    static func ledgerPayouts(_ rig: Rig) throws -> (paid: Int64, kinds: [String]) {
        let events = try rig.ledger().events(since: 0, limit: 100_000).filter { $0.kind.hasPrefix("payout_") }
        let paid = events.filter { ["payout_done", "payout_partial", "payout_failed"].contains($0.kind) }.reduce(Int64(0)) { sum, event in
            let detail = (try? JSONSerialization.jsonObject(with: Data((event.detail ?? "{}").utf8))) as? [String: String]
            return sum + (Int64(detail?["paid_minor"] ?? "") ?? -1_000_000)
        }
        return (paid, events.map(\.kind))
    }

    @Test("a payout pays what the ledger says, once per request id; an amount the tubes cannot make moves nothing")
    func paysOnce() throws {
        let rig = try Self.rig("mdb-payout")
        let daemon = try rig.startDaemon()
        let client = try Self.connect(rig)

        let first = try Self.payout(client, 65, "p1")
        #expect(first["state"] == "done" && first["paid_minor"]?.int == 65 && first["debt_minor"]?.int == 0, "\(first)")
        // The fewest coins: a half dollar, a dime and a nickel.
        let coins = (first["coins"]?.array ?? []).map { "\($0["count"]?.int ?? 0)×\($0["coin_id"]?.string ?? "?")" }
        #expect(Set(coins) == ["1×USD50", "1×USD10", "1×USD5"], "\(first)")
        // Again: answered from the ledger, nothing paid.
        let again = try Self.payout(client, 65, "p1")
        #expect(again["repeated"] == true && again["state"] == "done" && again["paid_minor"]?.int == 65)
        #expect(throws: ClientError.self) { try Self.payout(client, 70, "p1") }
        // 3 cents: no coin makes it; nothing journalled.
        let refused = try Self.payout(client, 3, "p2")
        #expect(refused["state"] == "refused" && refused["reason"] == "cannot_pay_exact" && refused["nearest_above"]?.int == 5, "\(refused)")
        // 2.40: four half dollars and a quarter, a dime and a nickel, in four DISPENSEs.
        let large = try Self.payout(client, 240, "p3")
        #expect(large["state"] == "done" && large["paid_minor"]?.int == 240, "\(large)")
        // coinctl says it, and a control command needs no more than the socket's control access.
        let ctl = try ChildProcess("coinctl", ["payout", "0.15", "--request-id", "p4", "--socket", "\(rig.dir)/run/coinmechd.sock"])
        #expect(ctl.wait() == 0)
        #expect(String(decoding: ctl.readToEnd(), as: UTF8.self).hasPrefix("payout p4: done, paid USD 0.15 of USD 0.15"))

        let truth = try Self.finish(rig, daemon)
        // Ground truth: the changer paid 65 + 240 + 15, in as many DISPENSEs as were journalled.
        #expect(truth.paidOutValue["USD"] == 320, "\(truth.payouts)")
        let ledger = try Self.ledgerPayouts(rig)
        #expect(ledger.paid == 320)
        #expect(ledger.kinds.filter { $0 == "payout_dispensing" }.count == truth.payouts.count)
        #expect(ledger.kinds.filter { $0 == "payout_requested" }.count == 3)
        #expect(try rig.ledger().payout(requestID: "p2") == nil)
        #expect(truth.payouts.allSatisfy { $0.ended == "paid" && $0.paid == $0.asked })
        // Let go at the stop: the changer takes no coin nobody polls for.
        #expect(truth.enabledAtEnd == 0)
        // The inventory on the ledger is the changer's: its tubes as they ended, recorded after
        // each payout (`tubes_counted`) whether or not a coin followed.
        let row = try #require(try rig.ledger().acceptorCounter(source: "mdb", address: 0x08))
        #expect(row.lastResults.map(Int.init) == truth.tubesAtEnd)
        #expect(try rig.ledger().events(since: 0, limit: 100_000).contains { $0.kind == "tubes_counted" && ($0.detail ?? "").contains("payout") })
    }

    @Test("a tube that jams mid-payout: the rest is planned from the others, and what none can pay is recorded as owed")
    func jamOwes() throws {
        // 0.40 is a quarter, a dime and a nickel; the third coin paid jams (the nickel).
        let rig = try Self.rig("mdb-payout-jam", faults: "mdb: {faults: {payout_jam_after: 2}}")
        let daemon = try rig.startDaemon()
        let client = try Self.connect(rig)
        let result = try Self.payout(client, 40, "j1")
        let truth = try Self.finish(rig, daemon)
        #expect(truth.paidOutValue["USD"] == 35, "\(truth.payouts)")
        #expect(truth.payouts.contains { $0.ended == "jam" })
        #expect(result["state"] == "partial" && result["paid_minor"]?.int == 35 && result["debt_minor"]?.int == 5, "\(result)")
        #expect(result["reason"]?.string?.contains("USD5: 0 of 1 paid") == true, "\(result)")
        let ledger = try Self.ledgerPayouts(rig)
        #expect(ledger.paid == 35 && ledger.kinds.last == "payout_partial")
        let status = try rig.ledger().events(since: 0, limit: 10_000).filter { $0.kind == "mech_status" }
        #expect(status.contains { ($0.detail ?? "").contains("tube jam") }, "the jam is on the ledger")
    }

    /// A payout asked for on another thread (its answer comes when it is paid).
    final class Asked: Sendable {
        private let answer = Mutex<Result<JSON, ClientError>?>(nil)

        init(_ rig: Rig, _ amount: Int64, _ id: String) {
            let socket = "\(rig.dir)/run/coinmechd.sock"
            Thread.detachNewThread { [self] in
                let result: Result<JSON, ClientError>
                do throws(ClientError) {
                    result = .success(try CoinMechConnection(path: socket).request(.payout(amountMinor: amount, currency: nil, requestID: id), timeout: 60))
                } catch {
                    result = .failure(error)
                }
                self.answer.withLock { $0 = result }
            }
        }

        func wait() throws -> Result<JSON, ClientError> {
            var result: Result<JSON, ClientError>?
            try TestSupport.waitUntil("the payout's answer", timeout: 60) {
                result = answer.withLock { $0 }
                return result != nil
            }
            return result!
        }
    }

    @Test("stopped with SIGTERM mid-payout, the daemon counts the DISPENSE under way and settles it before it lets go; no further step is sent")
    func stopMidPayout() throws {
        // 2 s a coin: this test must see the first DISPENSE journalled and stop the daemon
        // before that coin has dropped (at 400 ms, a loaded machine could see it late).
        let rig = try Self.rig("mdb-payout-stop", faults: "mdb: {pay_interval_ms: 2000}")
        let daemon = try rig.startDaemon()
        _ = try Self.connect(rig)
        // 0.40: a quarter, a dime, a nickel; stopped while the quarter is being paid.
        let asked = Asked(rig, 40, "s1")
        try TestSupport.waitUntil("the first DISPENSE journalled", timeout: 20) { Self.dispensing(rig) >= 1 }
        daemon.signal(SIGTERM)
        #expect(daemon.wait(timeout: 30) == 0, "\(daemon.stderr)")
        let answer = try asked.wait().get()
        rig.sim.signal(SIGTERM)
        #expect(rig.sim.wait(timeout: 20) == 0, "coinsim: \(rig.sim.stderr)")
        let truth = try rig.truth()
        let paid = truth.paidOutValue["USD", default: 0]
        #expect(paid == 25 && truth.payouts.count == 1, "only the step under way was paid: \(truth.payouts)")
        #expect(answer["state"] == "partial" && answer["paid_minor"]?.int == 25 && answer["debt_minor"]?.int == 15, "\(answer)")
        #expect(answer["after_restart"] == false)
        #expect(try rig.ledger().openPayouts(source: "mdb").isEmpty, "settled by the daemon that began it")
        #expect(try Self.ledgerPayouts(rig).paid == 25)
    }

    static func dispensing(_ rig: Rig) -> Int {
        ((try? rig.ledger().events(since: 0, limit: 100_000)) ?? []).filter { $0.kind == "payout_dispensing" }.count
    }

    @Test("killed at each point of a payout, the next daemon settles it from the changer's tubes before any coin moves, and never pays it again",
          arguments: [("payout-journalled", Int64(0), 80), ("payout-dispensing", 25, 80), ("payout-counted@2", 35, 80),
                      // Still paying when the next daemon starts: it lets the changer finish before its RESET.
                      ("payout-dispensing", 25, 700)])
    func killMidPayout(failpoint: String, paidBeforeKill: Int64, payIntervalMilliseconds: Int) throws {
        let rig = try Self.rig("mdb-payout-kill", faults: "mdb: {pay_interval_ms: \(payIntervalMilliseconds)}")
        var daemon = try rig.startDaemon(environment: ["COINMECH_FAILPOINTS": "\(failpoint.split(separator: "@")[0])=kill\(failpoint.contains("@") ? "@" + failpoint.split(separator: "@")[1] : "")"])
        let client = try Self.connect(rig)
        // 0.40: a quarter, a dime, a nickel, in three steps.
        #expect(throws: ClientError.self) { try Self.payout(client, 40, "k1") }
        #expect(daemon.wait(timeout: 20) == 137)
        let open = try rig.ledger().openPayouts(source: "mdb")
        #expect(open.map(\.order.requestID) == ["k1"], "the payout is open on the ledger after the kill")

        daemon = try rig.startDaemon()
        let next = try Self.connect(rig)
        // Settled, the hold ends: the changer takes coins again.
        try TestSupport.waitUntil("the changer let go after the settlement", timeout: 30) {
            let changer = try next.request("status")["acceptor"]
            return changer?["held_for_payout"] == false && changer?["accepting"] == true
        }
        let answer = try Self.payout(next, 40, "k1")
        #expect(answer["repeated"] == true && answer["after_restart"] == true, "\(answer)")
        let truth = try Self.finish(rig, daemon)
        // The changer's own account: what it paid before and after the kill, once.
        let paid = truth.paidOutValue["USD", default: 0]
        #expect(paid == paidBeforeKill, "\(truth.payouts)")
        #expect(answer["paid_minor"]?.int == paid && answer["debt_minor"]?.int == 40 - paid, "\(answer)")
        #expect(answer["state"]?.string == (paid == 0 ? "failed" : paid == 40 ? "done" : "partial"))
        let ledger = try Self.ledgerPayouts(rig)
        #expect(ledger.paid == paid)
        #expect(truth.payouts.count == ledger.kinds.filter { $0 == "payout_dispensing" }.count - (paid == 0 ? 1 : 0),
                "every DISPENSE the changer took was journalled first, and none was sent again")
        #expect(try rig.ledger().openPayouts(source: "mdb").isEmpty)
        // The changer finished what it was paying: the next daemon's RESET did not cut it short.
        #expect(truth.payouts.allSatisfy { $0.ended == "paid" }, "\(truth.payouts)")
    }

    /// The journalled steps of a payout: value steps (level 3) and DISPENSEs.
    static func steps(_ rig: Rig, _ id: String) throws -> [PayoutStep] {
        try #require(try rig.ledger().payout(requestID: id)).steps
    }

    @Test("level 3's alternative payout: the changer is asked a value and chooses the coins; the ledger says what its tubes paid, once per request id")
    func alternativePayout() throws {
        let rig = try Self.rig("mdb-payout-value", faults: "mdb: {alternative_payout: true}", valuePayouts: true)
        let daemon = try rig.startDaemon()
        let client = try Self.connect(rig)
        let first = try Self.payout(client, 65, "v1")
        #expect(first["state"] == "done" && first["paid_minor"]?.int == 65 && first["debt_minor"]?.int == 0, "\(first)")
        // The changer's own choice, largest first: a half dollar, a dime and a nickel.
        let coins = (first["coins"]?.array ?? []).map { "\($0["count"]?.int ?? 0)×\($0["coin_id"]?.string ?? "?")" }
        #expect(Set(coins) == ["1×USD50", "1×USD10", "1×USD5"], "\(first)")
        let again = try Self.payout(client, 65, "v1")
        #expect(again["repeated"] == true && again["paid_minor"]?.int == 65)
        // 2.40 in one value step: the four half dollars left, a quarter, a dime and a nickel.
        let large = try Self.payout(client, 240, "v2")
        #expect(large["state"] == "done" && large["paid_minor"]?.int == 240, "\(large)")
        let truth = try Self.finish(rig, daemon)
        #expect(truth.paidOutValue["USD"] == 305, "\(truth.payouts)")
        #expect(try Self.ledgerPayouts(rig).paid == 305)
        for id in ["v1", "v2"] {
            let steps = try Self.steps(rig, id)
            #expect(steps.count == 1 && steps.allSatisfy(\.paysValue), "\(id): one value step, with every tube's count before it: \(steps)")
        }
        #expect(try Self.steps(rig, "v1").first?.tubesBefore?.prefix(4) == [18, 10, 8, 5], "the tubes at power-up")
        #expect(truth.payouts.allSatisfy { $0.ended == "paid" && $0.paid == $0.asked })
    }

    @Test("level 3, killed at each point of a value payout: the next daemon settles it from every tube's fall before any coin moves, and never pays it again",
          arguments: [("payout-journalled", Int64(0), 80), ("payout-dispensing", 40, 80), ("payout-dispensing", 40, 700)])
    func killMidValuePayout(failpoint: String, paidBeforeKill: Int64, payIntervalMilliseconds: Int) throws {
        let rig = try Self.rig("mdb-payout-value-kill", faults: "mdb: {alternative_payout: true, pay_interval_ms: \(payIntervalMilliseconds)}", valuePayouts: true)
        var daemon = try rig.startDaemon(environment: ["COINMECH_FAILPOINTS": "\(failpoint)=kill"])
        let client = try Self.connect(rig)
        // 0.40: the changer chooses a quarter, a dime and a nickel, in one value step.
        #expect(throws: ClientError.self) { try Self.payout(client, 40, "k1") }
        #expect(daemon.wait(timeout: 20) == 137)
        let open = try rig.ledger().openPayouts(source: "mdb")
        #expect(open.map(\.order.requestID) == ["k1"] && open.first?.steps.first?.paysValue == true, "the value step is open on the ledger after the kill")

        daemon = try rig.startDaemon()
        let next = try Self.connect(rig)
        try TestSupport.waitUntil("the changer let go after the settlement", timeout: 30) {
            let changer = try next.request("status")["acceptor"]
            return changer?["held_for_payout"] == false && changer?["accepting"] == true
        }
        let answer = try Self.payout(next, 40, "k1")
        #expect(answer["repeated"] == true && answer["after_restart"] == true, "\(answer)")
        let truth = try Self.finish(rig, daemon)
        // The changer's own account: what it paid, once, whoever watched.
        let paid = truth.paidOutValue["USD", default: 0]
        #expect(paid == paidBeforeKill, "\(truth.payouts)")
        #expect(answer["paid_minor"]?.int == paid && answer["debt_minor"]?.int == 40 - paid, "\(answer)")
        #expect(try Self.ledgerPayouts(rig).paid == paid)
        #expect(try Self.steps(rig, "k1").count == 1, "the value step was not journalled or sent again")
        #expect(try rig.ledger().openPayouts(source: "mdb").isEmpty)
        #expect(truth.payouts.allSatisfy { $0.ended == "paid" }, "the next daemon let the changer finish: \(truth.payouts)")
    }

    @Test("a changer that offers the alternative payout is not asked a value unless the configuration says so (source.alternative_payout)")
    func alternativePayoutOffByDefault() throws {
        let rig = try Self.rig("mdb-payout-value-off", faults: "mdb: {alternative_payout: true}")
        let daemon = try rig.startDaemon()
        let client = try Self.connect(rig)
        let answer = try Self.payout(client, 65, "o1")
        #expect(answer["state"] == "done" && answer["paid_minor"]?.int == 65, "\(answer)")
        let truth = try Self.finish(rig, daemon)
        #expect(truth.paidOutValue["USD"] == 65)
        let steps = try Self.steps(rig, "o1")
        #expect(!steps.isEmpty && steps.allSatisfy { !$0.paysValue }, "DISPENSEs of the coins planned: \(steps)")
    }
}
