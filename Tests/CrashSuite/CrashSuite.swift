import ArgumentParser
import CoinMechAudit
import CoinMechClient
import CoinMechFailpoints
import CoinMechHarness
import CoinMechLedger
import CoinSimCore
import Foundation

/// `make test-crash`: coinsim plays an endless fast scenario while coinmechd is killed at every
/// failpoint in turn, then at random moments with SIGKILL, and paused past the mech's deadline,
/// restarting it each time; at the end coinsim's ground truth is joined with the ledger, coin by
/// coin. The last line printed is the verdict as JSON; the exit status is 0 only when nothing
/// was lost, doubled or credited while returned.
@main
struct CrashSuite: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "coinmech-crash",
        abstract: "Prove nothing was lost, doubled or credited wrongly: kill coinmechd at every step (play), or judge a ledger (audit).",
        subcommands: [Play.self, LedgerAudit.self, Sell.self],
        defaultSubcommand: Play.self)

    static func ownDirectory() -> String {
        let exe = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        return (exe as NSString).deletingLastPathComponent
    }
}

/// The suite itself: `coinmech-crash [play] …`.
struct Play: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "play",
        abstract: "Kill and stall coinmechd at every step of the money path; prove nothing was lost, doubled or credited wrongly.",
        discussion: """
            Prints one line per episode, one line per unconfirmed coin (with the truth's explanation),
            then {"seed": N, "failpoints": F, "kills": K, "stalls": S, "power_losses": P, "coins": C, "lost": 0, "doubled": 0, "phantom": 0, "wrong_value": 0, "unconfirmed": U, "pending": 0}.
            Exit status: 0 the money is right; 1 it is not (the lines above say which coin); 2 the suite could not run.
            """)

    @Option(help: "Directory of the coinmechd, coinsim and plugin builds (default: this executable's).")
    var bin: String?
    @Option(help: "SIGKILLs: every other one at a random moment 0 to 1.5 s after the start, the others at the Nth event of a random step of the money path.")
    var kills = 50
    @Option(help: "SIGSTOP pauses longer than the mech's deadline (0.1 to 1.5 s), each followed by SIGCONT.")
    var stalls = 10
    @Flag(inversion: .prefixedNo, help: "Kill the daemon at each named failpoint in turn first.")
    var failpoints = true
    @Option(help: "Seed of the random moments and of the scenario (default: a new one, printed).")
    var seed: UInt64?
    @Flag(help: "Keep the scratch directory (ledger, logs, truth) and print its path.")
    var keep = false
    @Option(name: .customLong("protocol"), help: "The mech: serial (the raw-sensor mech), cctalk (a ccTalk coin acceptor) or mdb (an MDB changer, paying out too).")
    var lineProtocol: CrashProtocol = .serial

    func run() throws {
        // A new seed each run explores new moments; printed, so that any run can be repeated.
        let seed = seed ?? UInt64.random(in: 1...999_999)
        let repeatIt = "coinmech-crash --seed \(seed) --kills \(kills) --stalls \(stalls)\(failpoints ? "" : " --no-failpoints") --protocol \(lineProtocol.rawValue)"
        print("coinmech-crash: seed \(seed) (\(repeatIt) repeats this run)")
        do {
            let suite = try Run(bin: bin ?? CrashSuite.ownDirectory(), seed: seed, protocol: lineProtocol)
            var verdict = try suite.play(failpoints: failpoints, kills: kills, stalls: stalls)
            verdict.seed = seed
            if keep { print("kept: \(suite.dir)") } else { try? FileManager.default.removeItem(atPath: suite.dir) }
            if !verdict.isClean { print("the money is wrong; repeat the run with: \(repeatIt) --keep") }
            print(verdict.json)
            if !verdict.isClean { throw ExitCode(1) }
            if !verdict.unreached.isEmpty {
                throw CrashSuiteError("the run never reached \(verdict.unreached.joined(separator: ", ")): more kills reach more coins (\(repeatIt) --keep)")
            }
        } catch let error as CrashSuiteError {
            FileHandle.standardError.write(Data("coinmech-crash: \(error)\n".utf8))
            throw ExitCode(2)
        }
    }
}

/// What the suite found.
struct Verdict {
    var seed: UInt64 = 0
    var failpoints = 0
    /// Coins the mech lost power under while they fell (coinsim's power_loss_at).
    var powerLosses = 0
    /// Times the mech rebooted while the daemon was away (the new boot learnt at the next connect).
    var rebootsWhileAway = 0
    /// Readings the mech sent again under their number with another measurement.
    var falseDuplicates = 0
    var kills = 0
    var stalls = 0
    var audit: MoneyAudit
    /// The ccTalk run's audit (then `audit` is empty).
    var cctalk: CCTalkMoneyAudit?
    /// The MDB run's audit, and its payouts as the payer saw them (then `audit` is empty).
    var mdb: MDBMoneyAudit?
    /// The ccTalk run's money out, from its hoppers.
    var hoppers: HopperMoneyAudit?
    var payer: Payer.State?
    /// The MDB run's sale application: the customer's credit judged against its journal.
    var credit: CreditAudit?
    var sale = SaleRun()

    struct SaleRun {
        var kills = 0
        var starts = 0
        /// Commands it never had an answer to, and refusals it could not retry out of.
        var unanswered = 0
        var badRequests = 0
    }

    /// Daemons that died mid-run: each may take one POLL reply's coins with it (MDB).
    var deaths: Int { failpoints + kills }
    /// A POLL reply holds the coins of 50 ms; at 2 coins a second, two at most.
    var skippedAllowed: Int { 2 * deaths }

    var isClean: Bool {
        if let mdb {
            return mdb.isClean && mdb.skipped <= skippedAllowed && credit?.isClean != false && sale.unanswered == 0 && sale.badRequests == 0
        }
        if let cctalk { return cctalk.isClean && hoppers?.isClean != false }
        return audit.isClean
    }

    /// The mech's surprises a serial run must have met for its verdict to mean what CI takes it
    /// to mean; a run that met none of one kind proves nothing about it.
    var unreached: [String] {
        if let mdb {
            return [("a payout that jammed", mdb.jams), ("a payout cut by a power cycle", mdb.resetsMidPayout),
                    ("a payout repeated after a death", payer?.repeats ?? 0), ("a reply the adapter lost", mdb.lostReplies),
                    ("a tube count that disagreed with its DISPENSE", mdb.tubeLags), ("a sale application killed", sale.kills),
                    ("a sale", credit?.sales ?? 0), ("a sale put back", credit?.refunds ?? 0),
                    ("the credit paid back as change", credit?.returns ?? 0)].filter { $0.1 == 0 }.map(\.0)
        }
        if let hoppers {
            return [("a hopper that jammed", hoppers.jams), ("a hopper that lost power mid-payout", hoppers.powerDowns),
                    ("a payout repeated after a death", payer?.repeats ?? 0), ("a hopper reply lost", hoppers.lostReplies),
                    ("a hopper NAK", hoppers.naks), ("a hopper BUSY", hoppers.busies), ("a hidden serial number", hoppers.hiddenSerials),
                    ("a hopper exchanged mid-payout", hoppers.exchanges)].filter { $0.1 == 0 }.map(\.0)
        }
        guard cctalk == nil else { return [] }
        return [("a power loss mid-coin", powerLosses), ("a reboot while the daemon was away", rebootsWhileAway),
                ("a false duplicate", falseDuplicates)].filter { $0.1 == 0 }.map(\.0)
    }

    var json: String {
        if let mdb {
            return "{\"protocol\": \"mdb\", \"seed\": \(seed), \"failpoints\": \(failpoints), \"kills\": \(kills), \"stalls\": \(stalls), "
                + "\"kept\": \(mdb.kept), \"credits\": \(mdb.credited), \"skipped\": \(mdb.skipped), \"skipped_allowed\": \(skippedAllowed), "
                + "\"doubled\": \(mdb.doubled.count), \"phantom\": \(mdb.phantom ? 1 : 0), \"payouts\": \(mdb.payouts), \"dispenses\": \(mdb.dispenses), "
                + "\"value_payouts\": \(Run.paysValue(seed: seed)), "
                + "\"repeats\": \(payer?.repeats ?? 0), \"refused\": \(payer?.refused ?? 0), \"jams\": \(mdb.jams), \"resets_mid_payout\": \(mdb.resetsMidPayout), "
                + "\"lost_replies\": \(mdb.lostReplies), \"tube_lags\": \(mdb.tubeLags), "
                + "\"paid_minor\": \(mdb.paidMinor), \"debt_minor\": \(mdb.debtMinor), \"open\": \(mdb.open), "
                + "\"paid_twice\": \(mdb.paidTwice), \"unpaid_unrecorded\": \(mdb.unpaidUnrecorded), \"inventory_mismatch\": \(mdb.inventoryMismatch.count)"
                + (credit.map { c in
                    ", \"sales\": \(c.sales), \"refunds\": \(c.refunds), \"returns\": \(c.returns), \"spent_twice\": \(c.spentTwice), "
                        + "\"approved_beyond_credit\": \(c.approvedBeyondCredit), \"lost\": \(c.lost), \"phantom_moves\": \(c.phantom), "
                        + "\"refused_but_moved\": \(c.refusedButMoved), "
                        + "\"money_conserved\": \(c.moneyConserved), \"coins_in_minor\": \(c.coinsInMinor), \"sales_minor\": \(c.salesMinor - c.refundedMinor), "
                        + "\"change_paid_minor\": \(c.changePaidMinor), \"owed_minor\": \(c.owedMinor), \"standing_minor\": \(c.standingMinor), "
                        + "\"app_kills\": \(sale.kills), \"app_unanswered\": \(sale.unanswered), \"app_bad_requests\": \(sale.badRequests)"
                } ?? "") + "}"
        }
        if let cctalk {
            return "{\"protocol\": \"cctalk\", \"seed\": \(seed), \"failpoints\": \(failpoints), \"kills\": \(kills), \"stalls\": \(stalls), "
                + "\"credits\": \(cctalk.credits), \"lost\": \(cctalk.lost.count), \"doubled\": \(cctalk.doubled.count), "
                + "\"phantom\": \(cctalk.phantom.count), \"dropped_by_acceptor\": \(cctalk.namedLost), \"value_ok\": \(cctalk.creditedValue == cctalk.owedValue)"
                + (hoppers.map { h in
                    ", \"payouts\": \(h.payouts), \"dispenses\": \(h.dispenses), \"repeats\": \(payer?.repeats ?? 0), \"refused\": \(payer?.refused ?? 0), "
                        + "\"jams\": \(h.jams), \"power_downs\": \(h.powerDowns), \"empties\": \(h.empties), \"lost_replies\": \(h.lostReplies), "
                        + "\"naks\": \(h.naks), \"busies\": \(h.busies), \"hidden_serials\": \(h.hiddenSerials), \"exchanges\": \(h.exchanges), \"paid_minor\": \(h.paidMinor), "
                        + "\"debt_minor\": \(h.debtMinor), \"unverifiable\": \(h.unverifiable), \"open\": \(h.open), \"paid_twice\": \(h.paidTwice), "
                        + "\"unpaid_unrecorded\": \(h.unpaidUnrecorded), \"inventory_mismatch\": \(h.inventoryMismatch.count)"
                } ?? "") + "}"
        }
        return "{\"seed\": \(seed), \"failpoints\": \(failpoints), \"kills\": \(kills), \"stalls\": \(stalls), \"power_losses\": \(powerLosses), "
            + "\"reboots_while_away\": \(rebootsWhileAway), \"false_duplicates\": \(falseDuplicates), "
            + "\"coins\": \(audit.coins), \"lost\": \(audit.lost.count), \"doubled\": \(audit.doubled.count), \"phantom\": \(audit.phantom.count), "
            + "\"wrong_value\": \(audit.wrongValue.count), \"unconfirmed\": \(audit.unconfirmed.count), \"pending\": \(audit.pending.count)}"
    }
}

/// One run of the suite in a scratch directory.
final class Run {
    let bin: String
    let dir: String
    let lineProtocol: CrashProtocol
    var random: SplitMix64
    private var simulator: ChildProcess?
    /// The sale application (`coinmech-crash sell`), killed and started again during the run.
    private var seller: ChildProcess?
    private var sellerStarts = 0
    private var sellerKills = 0
    var sellerJournal: String { "\(dir)/sale-journal.jsonl" }
    private var daemon: ChildProcess?
    private var daemonStarts = 0
    private var killCount = 0

    var config: String { "\(dir)/coinmechd.yaml" }
    var socket: String { "\(dir)/run/coinmechd.sock" }

    init(bin: String, seed: UInt64, protocol lineProtocol: CrashProtocol = .serial) throws {
        self.bin = bin
        self.lineProtocol = lineProtocol
        random = SplitMix64(seed: seed)
        var template = Array("\(NSTemporaryDirectory())/coinmech-crash-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw CrashSuiteError("mkdtemp: \(String(cString: strerror(errno)))") }
        dir = String(cString: made)
        for tool in ["coinmechd", "coinsim", "libcoin-table.so", "libcoin-id.so"] where !FileManager.default.fileExists(atPath: "\(bin)/\(tool)") {
            throw CrashSuiteError("\(bin)/\(tool) not found: build first (swift build), or pass --bin")
        }
        switch lineProtocol {
        case .cctalk:
            try writeCCTalkFiles(seed: seed)
            return
        case .mdb:
            try writeMDBFiles(seed: seed)
            return
        case .serial: break
        }
        try FixtureDaemon.configuration(source: "{kind: serial, device: mech, baud: 115200, confirm_window_ms: 300}", chain: FixtureChains.usd)
            .write(toFile: config, atomically: true, encoding: .utf8)
        // The fast scenario: coins as a busy cabinet sees them, and every way the mech can
        // surprise the host (bounces, lost confirmations, repeated sentences, power lost mid-coin;
        // the first power loss early enough for the short run, which sees about 130 coins; a
        // reboot each fourth time the daemon goes away; readings measured again).
        try """
            name: crash
            seed: \(seed)
            coins: 0
            rate_per_s: 15
            baud: 115200
            currency: USD
            mix: {quarter: 3, dime: 2, nickel: 1}
            others: {slug: 0.05}
            faults: {duplicate: 0.03, bounce: 0.05, lost_confirmation: 0.1, power_loss_at: [40, 150, 600],
                     false_duplicate_at: [20, 70, 120, 300, 700], reboot_while_away_every: 4}
            """.write(toFile: "\(dir)/crash.yaml", atomically: true, encoding: .utf8)
    }

    func play(failpoints: Bool, kills: Int, stalls: Int) throws -> Verdict {
        let sim = try ChildProcess(path: "\(bin)/coinsim", ["--scenario", "\(dir)/crash.yaml", "--link", "\(dir)/mech", "--truth", "\(dir)/truth.json",
                                               "--linger-ms", "3000"] + lineProtocol.simulatorArguments, stderrPath: "\(dir)/coinsim.log")
        simulator = sim
        guard sim.readLine(timeout: 20) != nil else { throw CrashSuiteError("coinsim printed no device: see \(dir)/coinsim.log") }
        var verdict = Verdict(audit: MoneyAudit(truths: [], events: [], boots: [:]))
        // Money out, throughout the run: payouts asked for while the daemon lives and dies.
        let payer: Payer? = switch lineProtocol {
        case .mdb: Payer(socket: socket, seed: random.next())
        case .cctalk: Payer(socket: socket, seed: random.next(), amounts: Self.payoutAmounts)
        case .serial: nil
        }
        payer?.start()
        if lineProtocol == .mdb { try startSeller() }

        if failpoints {
            for point in Failpoints.Point.allCases where lineProtocol.passes(point) {
                try failpoint(point)
                verdict.failpoints += 1
            }
            // A sale's commit that landed and is reported failed: read back, answered once.
            if lineProtocol.passes(.creditCommitted) {
                try landedReportedFailed(.creditCommitted)
                verdict.failpoints += 1
            }
        }
        // Kills at random moments, with the stalls spread among them.
        let stallAfter = Set((0..<stalls).map { stalls == 0 ? 0 : ($0 * max(kills, 1)) / stalls })
        var stallsDone = 0
        for index in 0..<max(kills, stalls) {
            if stallAfter.contains(index), stallsDone < stalls {
                try stall()
                stallsDone += 1
                verdict.stalls += 1
            }
            if index < kills {
                try randomKill()
                verdict.kills += 1
            }
        }
        verdict.payer = payer?.stop()
        try finish()
        if lineProtocol == .mdb {
            verdict.mdb = try mdbAudit()
            verdict.credit = try creditAudit()
            let journal = try SaleJournal.answers(sellerJournal)
            verdict.sale = Verdict.SaleRun(kills: sellerKills, starts: journal.starts, unanswered: journal.unanswered,
                                           badRequests: journal.answers.filter { $0.state == "bad_request" }.count)
            if let credit = verdict.credit, !credit.isClean { print(credit.problems.joined(separator: "\n")) }
            if verdict.sale.unanswered + verdict.sale.badRequests > 0 {
                print("the sale application: \(verdict.sale.unanswered) commands never answered, \(verdict.sale.badRequests) refused as bad (\(sellerJournal))")
            }
            if let audit = verdict.mdb, !verdict.isClean {
                print(audit.problems)
                if audit.skipped > verdict.skippedAllowed { print("SKIPPED: \(audit.skipped) kept coins not credited, more than \(verdict.skippedAllowed) for \(verdict.deaths) deaths") }
            }
            return verdict
        }
        if lineProtocol == .cctalk {
            verdict.cctalk = try cctalkAudit()
            verdict.hoppers = try hopperAudit()
            if let audit = verdict.cctalk, !audit.isClean { print(audit.problems) }
            if let audit = verdict.hoppers, !audit.isClean { print(audit.problems) }
            return verdict
        }
        let truth: GroundTruth
        (verdict.audit, truth) = try audit()
        verdict.powerLosses = truth.coins.filter { $0.confirmation == "power_lost" }.count
        verdict.rebootsWhileAway = truth.faultsInjected.rebootsWhileAway
        verdict.falseDuplicates = truth.faultsInjected.falseDuplicates
        for (key, explanation) in verdict.audit.unconfirmed {
            print("unconfirmed: \(key): \(explanation ?? "NO CAUSE IN THE TRUTH")")
        }
        if !verdict.audit.isClean { print(verdict.audit.problems) }
        return verdict
    }

    // MARK: Episodes

    /// Starts the daemon armed at `point` and waits for it to die there (SIGKILL from itself).
    private func failpoint(_ point: Failpoints.Point) throws {
        let drawn = Int.random(in: 1...3, using: &random)
        let hit = point == .listening ? 1 : drawn  // hit once per start
        let daemon = try startDaemon(environment: ["COINMECH_FAILPOINTS": "\(point.rawValue)=kill@\(hit)"])
        switch point {
        case .reloadSwap:
            try waitForSocket(daemon)
            for _ in 0..<hit where daemon.isRunning {
                daemon.signal(SIGHUP)
                usleep(300_000)
            }
        case .collect:
            try waitForSocket(daemon)
            for _ in 0..<hit where daemon.isRunning { _ = try? CoinMechConnection(path: socket).request("collect") }
        default:
            break
        }
        guard let status = daemon.wait(timeout: 60) else {
            throw CrashSuiteError("the daemon never reached failpoint \(point.rawValue) (hit \(hit)) in 60 s: see \(daemon.stderrPath)")
        }
        guard status == 128 + SIGKILL else { throw CrashSuiteError("failpoint \(point.rawValue): the daemon exited with \(status), not by SIGKILL: see \(daemon.stderrPath)") }
        print("failpoint \(point.rawValue) (hit \(hit)): killed there")
    }

    /// Starts the daemon armed to report a commit at `point` failed though it landed, waits
    /// until it has, and stops the daemon cleanly: its core must read the ledger back.
    private func landedReportedFailed(_ point: Failpoints.Point) throws {
        let hit = Int.random(in: 1...3, using: &random)
        let daemon = try startDaemon(environment: ["COINMECH_FAILPOINTS": "\(point.rawValue)=fail@\(hit)"])
        let deadline = Date().addingTimeInterval(60)
        while !daemon.stderr.contains("failpoint \(point.rawValue): fail") {
            guard daemon.isRunning else { throw CrashSuiteError("the daemon exited before failpoint \(point.rawValue) failed: see \(daemon.stderrPath)") }
            guard Date() < deadline else { throw CrashSuiteError("the daemon never reached failpoint \(point.rawValue) (hit \(hit)) in 60 s: see \(daemon.stderrPath)") }
            usleep(50_000)
        }
        usleep(useconds_t(Int.random(in: 200...1000, using: &random)) * 1000)
        daemon.signal(SIGTERM)
        guard daemon.wait(timeout: 30) == 0 else { throw CrashSuiteError("after failpoint \(point.rawValue) failed, the daemon did not stop cleanly: see \(daemon.stderrPath)") }
        print("failpoint \(point.rawValue) (hit \(hit)): a landed commit reported failed, read back")
    }

    /// Starts the daemon and kills it with SIGKILL after 0 to 1.5 s: during start-up, between
    /// coins, or anywhere in a batch.
    /// Every other kill is tied to a coin: at the Nth event of one step of the money path
    /// (between a commit and its answer, between the answer and the mech's confirmation, while
    /// a settlement is received or committed), N from 1 to 12. The others come at a random moment.
    private func randomKill() throws {
        killCount += 1
        // The sale application dies too, a third of the time: it must ask again what it had asked.
        if seller != nil, random.next() % 3 == 0 { try killSeller() }
        let coinSteps: [Failpoints.Point] = [.afterCommit, .journalled, .answerWritten, .confirmationReceived, .confirmationCommitted, .payoutJournalled, .payoutDispensing,
                                             .payoutCounted, .creditCommitted].filter { lineProtocol.passes($0) }
        if killCount % 2 == 0, let point = coinSteps.randomElement(using: &random) {
            let hit = Int.random(in: 1...12, using: &random)
            let daemon = try startDaemon(environment: ["COINMECH_FAILPOINTS": "\(point.rawValue)=kill@\(hit)"])
            var status = daemon.wait(timeout: 20)
            if status == nil {
                daemon.signal(SIGKILL)
                status = daemon.wait(timeout: 30)
            }
            print("kill at \(point.rawValue) #\(hit): \(status.map { $0 == 137 ? "killed" : "had exited with \($0)" } ?? "still running")")
            if let status, status != 137 { throw CrashSuiteError("the daemon exited by itself with \(status) before the kill: see \(daemon.stderrPath)") }
            return
        }
        let daemon = try startDaemon()
        let after = Int.random(in: 0...1500, using: &random)
        usleep(useconds_t(after) * 1000)
        daemon.signal(SIGKILL)
        let status = daemon.wait(timeout: 30)
        print("kill after \(after) ms: \(status.map { $0 == 137 ? "killed" : "had exited with \($0)" } ?? "still running")")
        if let status, status != 137 { throw CrashSuiteError("the daemon exited by itself with \(status) before the kill: see \(daemon.stderrPath)") }
    }

    /// Pauses a running daemon for longer than the mech's 50 ms deadline, lets it go on, then
    /// stops it cleanly.
    private func stall() throws {
        let daemon = try startDaemon()
        try waitForSocket(daemon)
        usleep(useconds_t(Int.random(in: 200...800, using: &random)) * 1000)
        let pause = Int.random(in: 100...1500, using: &random)
        daemon.signal(SIGSTOP)
        usleep(useconds_t(pause) * 1000)
        daemon.signal(SIGCONT)
        usleep(useconds_t(Int.random(in: 300...1000, using: &random)) * 1000)
        daemon.signal(SIGTERM)
        guard daemon.wait(timeout: 30) == 0 else { throw CrashSuiteError("after a stall the daemon did not stop cleanly: see \(daemon.stderrPath)") }
        print("stall of \(pause) ms: the daemon carried on and stopped cleanly")
    }

    /// A last daemon settles what is pending while coinsim stops inserting and lingers for its
    /// queries; then both stop.
    private func finish() throws {
        let daemon = try startDaemon()
        try waitForSocket(daemon)
        usleep(1_000_000)
        // The sale application asks what it has unanswered, then stops.
        if let seller {
            seller.signal(SIGTERM)
            guard seller.wait(timeout: 90) == 0 else { throw CrashSuiteError("the sale application did not stop cleanly: see \(seller.stderrPath)") }
            self.seller = nil
        }
        guard let sim = simulator else { return }
        sim.signal(SIGTERM)
        let client = try CoinMechConnection(path: socket)
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline, sim.isRunning {
            if (try? client.request("status")["pending"]?.int) == 0 { break }
            usleep(50_000)
        }
        guard sim.wait(timeout: 30) == 0 else { throw CrashSuiteError("coinsim did not finish: see \(dir)/coinsim.log") }
        daemon.signal(SIGTERM)
        guard daemon.wait(timeout: 30) == 0 else { throw CrashSuiteError("the last daemon did not stop cleanly: see \(daemon.stderrPath)") }
    }

    private func startSeller() throws {
        sellerStarts += 1
        seller = try ChildProcess(path: "\(CrashSuite.ownDirectory())/coinmech-crash",
                                  ["sell", "--socket", socket, "--journal", sellerJournal, "--seed", "\(random.next())"],
                                  stderrPath: "\(dir)/sell-\(sellerStarts).log")
    }

    private func killSeller() throws {
        guard let seller else { return }
        seller.signal(SIGKILL)
        guard seller.wait(timeout: 30) != nil else { throw CrashSuiteError("the sale application did not die on SIGKILL") }
        sellerKills += 1
        print("the sale application killed")
        try startSeller()
    }

    private func startDaemon(environment: [String: String] = [:]) throws -> ChildProcess {
        daemonStarts += 1
        let child = try ChildProcess(path: "\(bin)/coinmechd", ["--config", config, "--plugin-dir", bin], environment: environment,
                              stderrPath: "\(dir)/coinmechd-\(daemonStarts).log")
        daemon = child
        return child
    }

    private func waitForSocket(_ daemon: ChildProcess) throws {
        let deadline = Date().addingTimeInterval(30)
        while !FileManager.default.fileExists(atPath: socket) || (try? CoinMechConnection(path: socket)) == nil {
            guard daemon.isRunning else { throw CrashSuiteError("the daemon exited during start-up: see \(daemon.stderrPath)") }
            guard Date() < deadline else { throw CrashSuiteError("the daemon's socket did not appear in 30 s: see \(daemon.stderrPath)") }
            usleep(10_000)
        }
    }

    private func audit() throws -> (MoneyAudit, GroundTruth) {
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        let truth = try decoder.decode(GroundTruth.self, from: Data(contentsOf: URL(fileURLWithPath: "\(dir)/truth.json")))
        let ledger = try Ledger(directory: "\(dir)/state")
        let audit = MoneyAudit(truths: [truth], events: try ledger.events(since: 0, limit: 100_000_000), boots: try ledger.boots(source: "serial"))
        return (audit, truth)
    }
}
