import CoinMechAudit
import CoinMechClient
import CoinMechHarness
import CoinMechLedger
import CoinMechModel
import CoinMechProtocol
import CoinSimCore
import Foundation
import Synchronization

/// Asks the daemon for payouts, one after another, for as long as the run lasts: the money out
/// of the MDB and ccTalk (hopper) crash runs. A payout whose answer never came (the daemon died, or stopped) is asked
/// again with the same request id until it is answered: a correct daemon pays it once, answering
/// the repeat from its ledger. Runs on a thread of its own.
final class Payer: Sendable {
    private let socket: String
    private let state: Mutex<State>

    struct State {
        var stopping = false
        var finished = false
        var number = 0
        let seed: UInt64
        /// Answers: settled (done, partial, failed), refused, repeats.
        var settled = 0
        var refused = 0
        var repeats = 0
        var unanswered = 0
    }

    private let amounts: [Int64]

    init(socket: String, seed: UInt64, amounts: [Int64] = [5, 15, 30, 35, 40, 65, 90, 3]) {
        self.socket = socket
        self.amounts = amounts
        state = Mutex(State(seed: seed))
    }

    func start() {
        let thread = Thread { [self] in self.run() }
        thread.name = "payer"
        thread.start()
    }

    /// Stops asking; the payout in hand is answered or abandoned first (at most its timeout).
    func stop() -> State {
        state.withLock { $0.stopping = true }
        while !state.withLock({ $0.finished }) { usleep(10_000) }
        return state.withLock { $0 }
    }

    private func run() {
        defer { state.withLock { $0.finished = true } }
        var random = SplitMix64(seed: state.withLock { $0.seed })
        var current: (id: String, amount: Int64)?
        while !state.withLock({ $0.stopping }) {
            if current == nil {
                let number = state.withLock { state in
                    state.number += 1
                    return state.number
                }
                current = ("crash-\(number)", amounts[Int(random.next() % UInt64(amounts.count))])
            }
            guard let asked = current, let client = try? CoinMechConnection(path: socket) else {
                usleep(20_000)
                continue
            }
            do {
                let answer = try client.request(.payout(amountMinor: asked.amount, currency: nil, requestID: asked.id), timeout: 30)
                state.withLock { state in
                    if answer["repeated"] == true { state.repeats += 1 }
                    if answer["state"] == "refused" { state.refused += 1 } else if answer["state"] != "open" { state.settled += 1 }
                }
                // An open payout (settled by a later start) is asked about again.
                if answer["state"] != "open" { current = nil }
                usleep(UInt32(100_000 + random.next() % 300_000))
            } catch {
                state.withLock { $0.unanswered += 1 }
                usleep(20_000)
            }
        }
    }
}

extension Run {
    /// The configuration and scenario of an MDB run: a USD changer with tubes, 2 coins a second,
    /// payouts asked for throughout, one payout that jams and one cut by a power cycle, replies
    /// lost on the adapter's line, and tube counts that disagree with the DISPENSE just paid.
    /// An odd seed's changer offers level 3's alternative payout: its payouts are value steps.
    func writeMDBFiles(seed: UInt64) throws {
        try FixtureDaemon.configuration(source: "{kind: mdb, device: mech, poll_interval_ms: 50, currencies: [USD], alternative_payout: \(Self.paysValue(seed: seed))}",
                                        chain: FixtureChains.usdCoinIDs)
            .write(toFile: config, atomically: true, encoding: .utf8)
        try """
            name: crash-mdb
            seed: \(seed)
            coins: 0
            rate_per_s: 2
            currency: USD
            mix: {nickel: 3, dime: 2, quarter: 3}
            others: {slug: 0.05}
            mdb: {alternative_payout: \(Self.paysValue(seed: seed)), faults: {payout_jam_after: 25, reset_during_payout_after: 12, lost_reply: 0.02, tube_lag: 0.3}}
            """.write(toFile: "\(dir)/crash.yaml", atomically: true, encoding: .utf8)
    }

    /// The customer's credit on the ledger, replayed, against the sale application's journal.
    func creditAudit() throws -> CreditAudit {
        let ledger = try Ledger(directory: "\(dir)/state")
        return CreditAudit(source: "mdb", currency: "USD", events: try ledger.events(since: 0, limit: 100_000_000), payouts: try ledger.payouts(source: "mdb"),
                           balanceMinor: try ledger.creditAccounts(source: "mdb").first { $0.currency == "USD" }?.balanceMinor,
                           answers: try SaleJournal.answers(sellerJournal).answers)
    }

    /// Whether the run's changer pays values itself (level 3's alternative payout): odd seeds.
    static func paysValue(seed: UInt64) -> Bool { seed % 2 == 1 }

    func mdbAudit() throws -> MDBMoneyAudit {
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        let truth = try decoder.decode(MDBGroundTruth.self, from: Data(contentsOf: URL(fileURLWithPath: "\(dir)/truth.json")))
        let ledger = try Ledger(directory: "\(dir)/state")
        return MDBMoneyAudit(truth: truth, events: try ledger.events(since: 0, limit: 100_000_000), payouts: try ledger.payouts(source: "mdb"),
                             tubes: try ledger.acceptorCounter(source: "mdb", address: 0x08)?.lastResults, source: "mdb")
    }
}
