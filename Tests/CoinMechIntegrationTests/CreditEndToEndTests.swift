import CoinMechClient
import CoinMechHarness
import CoinMechLedger
import CoinMechModel
import CoinMechProtocol
@testable import CoinMechTestSupport
import CoinSimCore
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The customer's credit held by the real daemon: coins from coinsim's MDB changer raise it, a
/// sale lowers it once per request id (across a restart), a refund puts it back, a cancel pays it
/// back as change from the changer's tubes. Judged against coinsim's truth (what the changer
/// kept and paid) and against the ledger's events summed here, not the daemon's balance column.
@Suite("Credit: coins raise it, a sale takes it once, a cancel pays it back as change, money conserved", .serialized)
struct CreditEndToEndTests {
    typealias Rig = MDBEndToEndTests.Rig

    /// Nickels and quarters at 5 a second until stopped.
    static func rig(_ name: String) throws -> Rig {
        try Rig(name, scenario: "name: \(name)\nseed: 31\ncoins: 0\nrate_per_s: 5\ncurrency: USD\nmix: {nickel: 1, quarter: 1}\n",
                simulatorArguments: ["--host-timeout", "30"])
    }

    static func connect(_ rig: Rig) throws -> CoinMechConnection {
        var connection: CoinMechConnection?
        try TestSupport.waitUntil("the daemon's socket", timeout: 30) {
            connection = connection ?? (try? CoinMechConnection(path: "\(rig.dir)/run/coinmechd.sock"))
            return connection != nil
        }
        return connection!
    }

    static func balance(_ client: CoinMechConnection) throws -> Int64 {
        let credit = try client.request(.credit, as: CreditBalanceReply.self)
        return credit.accounts.first { $0.currency == "USD" }?.balanceMinor ?? -1
    }

    /// The credit as the ledger's events make it: coins credited in, sales out, refunds in,
    /// returns out. Independent of `credit_accounts`, which the daemon keeps.
    struct Flows {
        var coins: Int64 = 0, spent: Int64 = 0, refunded: Int64 = 0, returned: Int64 = 0
        var balance: Int64 { coins - spent + refunded - returned }
    }

    static func flows(_ rig: Rig) throws -> Flows {
        var flows = Flows()
        for event in try rig.ledger().events(since: 0, limit: 1_000_000) where event.source == "mdb" {
            let value = event.valueMinor ?? 0
            switch event.kind {
            // Every credited coin has its `coin` event (at once or on the mech's word).
            case "coin": flows.coins += value
            case "credit_spent": flows.spent += value
            case "credit_refunded": flows.refunded += value
            case "credit_returned": flows.returned += value
            default: break
            }
        }
        return flows
    }

    static func serverError(_ body: () throws -> Void) -> (code: String, message: String)? {
        do {
            try body()
        } catch ClientError.server(let code, let message) {
            return (code, message)
        } catch {
            Issue.record("expected an error reply, got \(error)")
        }
        return nil
    }

    @Test("a sale once per request id across a restart, refused beyond the credit, refunded once; the credit returned as change; money conserved")
    func saleRefundReturn() throws {
        let rig = try Self.rig("credit-e2e")
        var daemon = try rig.startDaemon()
        var client = try Self.connect(rig)
        try TestSupport.waitUntil("credit of 1.00", timeout: 60) { ((try? Self.balance(client)) ?? 0) >= 100 }

        // Beyond the credit: refused with the balance, nothing recorded, the id free.
        let short = try client.request(.spend(amountMinor: 100_000, currency: nil, item: "B4", requestID: "s1"), as: CreditReply.self)
        #expect(short.state == .refused && short.reason == "credit_short" && short.balanceMinor >= 100, "\(short)")
        #expect(try rig.ledger().creditMoves(requestID: "s1").isEmpty)

        let sale = try client.request(.spend(amountMinor: 75, currency: "USD", item: "B4", requestID: "s1"), as: CreditReply.self)
        #expect(sale.state == .approved && sale.amountMinor == 75 && sale.item == "B4" && sale.repeated == false, "\(sale)")
        let saleEvent = try #require(try rig.ledger().events(since: 0, limit: 1_000_000).first { $0.kind == "credit_spent" })
        #expect(saleEvent.seq == sale.seq && saleEvent.valueMinor == 75)
        // Asked again: the same answer from the ledger.
        let again = try client.request(.spend(amountMinor: 75, currency: nil, item: "B4", requestID: "s1"), as: CreditReply.self)
        #expect(again.state == .approved && again.repeated == true && again.seq == sale.seq && again.balanceMinor == sale.balanceMinor)
        // Another amount or item under the same id: bad_request naming the id, nothing changed.
        let reused = Self.serverError { try client.request(.spend(amountMinor: 80, currency: nil, item: "B4", requestID: "s1")) }
        #expect(reused?.code == "bad_request" && reused?.message.hasPrefix("\"request_id\"") == true, "\(String(describing: reused))")
        let otherItem = Self.serverError { try client.request(.spend(amountMinor: 75, currency: nil, item: "C1", requestID: "s1")) }
        #expect(otherItem?.code == "bad_request", "\(String(describing: otherItem))")
        // Another currency: the credit is held in USD only.
        let euro = Self.serverError { try client.request(.spend(amountMinor: 5, currency: "EUR", item: nil, requestID: "s2")) }
        #expect(euro?.code == "bad_request" && euro?.message.hasPrefix("\"currency\"") == true, "\(String(describing: euro))")
        // A refund of a sale never approved.
        let never = Self.serverError { try client.request(.refund(requestID: "nope")) }
        #expect(never?.code == "bad_request" && never?.message.hasPrefix("\"request_id\"") == true, "\(String(describing: never))")

        // Across a restart the sale is answered from the ledger.
        daemon.signal(SIGTERM)
        #expect(daemon.wait(timeout: 20) == 0, "\(daemon.stderr)")
        daemon = try rig.startDaemon()
        client = try Self.connect(rig)
        var afterRestart: CreditReply?
        try TestSupport.waitUntil("the credit open again", timeout: 30) {
            afterRestart = try? client.request(.spend(amountMinor: 75, currency: nil, item: "B4", requestID: "s1"), as: CreditReply.self)
            return afterRestart != nil
        }
        #expect(afterRestart?.repeated == true && afterRestart?.seq == sale.seq, "\(String(describing: afterRestart))")

        // The product did not drop: put back once.
        let refund = try client.request(.refund(requestID: "s1"), as: CreditReply.self)
        #expect(refund.state == .refunded && refund.amountMinor == 75 && refund.repeated == false, "\(refund)")
        let refundAgain = try client.request(.refund(requestID: "s1"), as: CreditReply.self)
        #expect(refundAgain.repeated == true && refundAgain.seq == refund.seq)

        // A second sale, kept; then the customer presses the coin return.
        let kept = try client.request(.spend(amountMinor: 25, currency: nil, item: "A1", requestID: "s3"), as: CreditReply.self)
        #expect(kept.state == .approved, "\(kept)")
        try TestSupport.waitUntil("the changer set up", timeout: 30) {
            (try? client.request(.payoutPlan(amountMinor: 5, currency: nil)))?["payable"] == true
        }
        let returned = try client.request(.cancel(requestID: "c1"), as: CreditReply.self, timeout: 60)
        #expect(returned.state == .returned && returned.payout?.state == .done, "\(returned)")
        let paid = returned.payout?.paidMinor ?? -1
        let returnedAgain = try client.request(.cancel(requestID: "c1"), as: CreditReply.self, timeout: 60)
        #expect(returnedAgain.payout?.repeated == true && returnedAgain.payout?.paidMinor == paid, "\(returnedAgain)")
        // A sale id is not a return's, nor the other way round.
        let crossed = Self.serverError { try client.request(.spend(amountMinor: 5, currency: nil, item: nil, requestID: "c1")) }
        #expect(crossed?.code == "bad_request", "\(String(describing: crossed))")

        daemon.signal(SIGTERM)
        #expect(daemon.wait(timeout: 20) == 0, "\(daemon.stderr)")
        rig.sim.signal(SIGTERM)
        #expect(rig.sim.wait(timeout: 20) == 0, "coinsim: \(rig.sim.stderr)")
        let truth = try rig.truth()
        let flows = try Self.flows(rig)
        // The ledger's balance column is the events' sum.
        let account = try #require(try rig.ledger().creditAccounts(source: "mdb").first { $0.currency == "USD" })
        #expect(account.balanceMinor == flows.balance, "\(flows) against the account's \(account.balanceMinor)")
        #expect(flows.spent == 100 && flows.refunded == 75 && flows.returned == returned.payout?.amountMinor)
        // Ground truth: what the changer paid is the return's paid amount; the coins credited are
        // the changer's kept coins but for the one at most a stop leaves in it unpolled.
        #expect(truth.paidOutValue["USD"] == paid, "\(truth.payouts)")
        #expect((0...25).contains((truth.keptValue["USD"] ?? 0) - flows.coins), "kept \(truth.keptValue), credited \(flows.coins)")
        // Money conserved: coins in = sales + change paid + credit standing + owed.
        let owed = (returned.payout?.debtMinor ?? 0)
        #expect(flows.coins == (flows.spent - flows.refunded) + paid + account.balanceMinor + owed,
                "coins \(flows.coins), sales \(flows.spent - flows.refunded), paid \(paid), standing \(account.balanceMinor), owed \(owed)")
    }

    @Test("without a device that pays change, a cancel keeps the credit and says so; a user without control rights cannot spend")
    func keptAndForbidden() throws {
        let harness = try DaemonHarness(extra: "socket: {mode: \"0666\", control_users: [root]}")
        try harness.startSimulator("coins: 0\nrate_per_s: 10\nseed: 5\nmix: {quarter: 1}\n")
        try harness.startDaemon()
        _ = try harness.socketWhenUp()
        let client = try CoinMechConnection(path: harness.socket)
        try TestSupport.waitUntil("credit of 0.50", timeout: 30) { ((try? Self.balance(client)) ?? 0) >= 50 }
        let kept = try client.request(.cancel(requestID: "c1"), as: CreditReply.self)
        #expect(kept.state == .kept && kept.balanceMinor >= 50 && kept.reason?.contains("no device here pays change") == true, "\(kept)")
        let status = try client.request(.status, as: StatusReply.self)
        #expect(status.credit.first?.balanceMinor ?? 0 >= 50)

        chmod(harness.dir, 0o755)
        let spend = try ChildProcess("/usr/bin/setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups",
                                                          "\(TestSupport.binDirectory)/coinctl", "credit", "spend", "0.25", "--request-id", "n1",
                                                          "--socket", harness.socket], absolute: true)
        #expect(spend.wait() == 3)
        #expect(spend.stderr.contains("may not use 'spend' (forbidden)"), "\(spend.stderr)")
        // Reading it is allowed; coinctl shows it.
        let show = try ChildProcess("/usr/bin/setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups",
                                                         "\(TestSupport.binDirectory)/coinctl", "credit", "--socket", harness.socket], absolute: true)
        #expect(show.wait() == 0, "\(show.stderr)")
        #expect(String(decoding: show.readToEnd(), as: UTF8.self).hasPrefix("credit serial: USD "))
        #expect(try harness.ledger().creditMoves(requestID: "n1").isEmpty)
        _ = try harness.stopDaemon()
    }
}
