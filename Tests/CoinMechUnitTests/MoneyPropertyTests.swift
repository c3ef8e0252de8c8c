import CoinMechCore
import CoinMechLedger
import CoinMechModel
import CoinMechSerial
import CoinMechSources
import CoinSimCore
import Testing

/// The simulator's seedable generator, so a failing run names the seed that replays it.
typealias TestRandom = SplitMix64

/// The mech as the core's counterpart: it keeps a coin whose accept arrives in time (it may
/// still bounce), returns the rest, confirms (sometimes the line loses it), keeps a journal per
/// boot, and loses power now and then with a coin on its way.
struct ModelMech {
    struct Coin {
        var sentAt: Instant
        var fate: CoinFate?
        var inFlightUntil: Instant?
        var bounces: Bool
    }

    var boot: UInt64 = 1
    var devseq: UInt64 = 0
    var coins: [UInt64: [UInt64: Coin]] = [:]  // boot → devseq → coin
    var outbox: [(due: Instant, event: MechEvent)] = []
    /// Without power until then: no coins, no answers.
    var offUntil: Instant?

    /// Power goes: coins on their way end by chance (the journal cannot tell), readings waiting
    /// for an answer are returned, what was on the line is lost; numbering starts again under
    /// the next boot.
    mutating func reboot() {
        for (seq, coin) in coins[boot] ?? [:] where coin.fate == nil {
            coins[boot]?[seq]?.inFlightUntil = nil
            coins[boot]?[seq]?.fate = coin.inFlightUntil != nil ? .unknown : .returned
        }
        outbox.removeAll()
        boot += 1
        devseq = 0
    }

    /// A coin that heard no answer within its 50 ms deadline is returned, as the real mech does
    /// (a daemon killed between its decision and its answer leaves one).
    mutating func expireDeadlines(now: Instant) {
        for (seq, coin) in coins[boot] ?? [:] where coin.fate == nil && coin.inFlightUntil == nil && now > coin.sentAt + .milliseconds(50) {
            coins[boot]?[seq]?.fate = .returned
        }
    }

    /// Where each coin really ended: (boot, devseq) → stored?
    var truth: [String: Bool] {
        var truth: [String: Bool] = [:]
        for (boot, coins) in coins {
            for (seq, coin) in coins { if let fate = coin.fate, fate != .unknown { truth["\(boot)/\(seq)"] = fate == .stored } }
        }
        return truth
    }

    /// Coins whose fate the mech's journal cannot tell.
    var unknown: Set<String> {
        Set(coins.flatMap { boot, coins in coins.compactMap { $0.value.fate == .unknown ? "\(boot)/\($0.key)" : nil } })
    }
}

@Suite("Money properties: on random interleavings, nothing lost, doubled or credited that the mech returned")
struct MoneyPropertyTests {
    /// One random session: coins at random, stalls, repeats, lost confirmations, bounces, power
    /// losses, failing commits, daemon restarts, reboots while the line is down (the daemon
    /// perhaps restarted meanwhile), slow SESSION answers and garbled numbers; then time passes
    /// until nothing is pending. With `journal`, fresh decisions go through the decision journal,
    /// and the daemon is also killed now and then between a journal's sync and the ledger's commit.
    static func run(seed: UInt64, steps: Int = 150, journal: Bool = false) -> (problems: [String], taught: Int, installed: Int) {
        var random = TestRandom(seed: seed)
        var rig = CoreRig(settings: journal ? DecisionJournalCoreTests.settings : CoreRig.settings)
        var mech = ModelMech()
        var problems: [String] = []
        rig.feed(.mech([.connected(path: "/dev/mech"), .powerUp(boot: mech.boot)]))

        func handle(_ outputs: [CoreOutput], mech: inout ModelMech, rig: CoreRig, random: inout TestRandom) {
            for output in outputs {
                switch output {
                case .answer(let seq, let accept):
                    guard var coin = mech.coins[mech.boot]?[seq], coin.fate == nil, coin.inFlightUntil == nil else { continue }
                    // The answer reaches the mech after its time on the line (1.2 ms at 115200 baud).
                    let inTime = rig.now + .microseconds(1300) <= coin.sentAt + .milliseconds(50)
                    if accept && inTime {
                        coin.inFlightUntil = rig.now + .milliseconds(Int64.random(in: 80...160, using: &random))
                        coin.bounces = random.chance(0.1)
                    } else {
                        coin.fate = .returned
                        if accept { mech.outbox.append((rig.now + .milliseconds(2), .confirmation(deviceSeq: seq, fate: .returned))) }
                    }
                    mech.coins[mech.boot]?[seq] = coin
                case .query(let boot, let seq):
                    // On its way, or still waiting for its answer: asked again later (as coinsim).
                    if let coin = mech.coins[boot]?[seq], coin.fate == nil { continue }
                    let fate = mech.coins[boot]?[seq]?.fate ?? .unknown
                    mech.outbox.append((rig.now + .milliseconds(3), .journal(boot: boot, deviceSeq: seq, fate: fate)))
                case .askSession:
                    // The mech names its session soon, or after a while (a slow firmware, a busy line).
                    mech.outbox.append((rig.now + .milliseconds(Int64.random(in: 1...80, using: &random)), .session(boot: mech.boot)))
                default:
                    break
                }
            }
        }

        for _ in 0..<steps {
            rig.now = rig.now + .milliseconds(Int64.random(in: 10...120, using: &random))
            mech.expireDeadlines(now: rig.now)
            // Coins reach the cash box (or bounce), and say so; the line loses some confirmations.
            for (seq, coin) in mech.coins[mech.boot] ?? [:] {
                guard let until = coin.inFlightUntil, until <= rig.now else { continue }
                let fate: CoinFate = coin.bounces ? .returned : .stored
                mech.coins[mech.boot]?[seq] = ModelMech.Coin(sentAt: coin.sentAt, fate: fate, inFlightUntil: nil, bounces: coin.bounces)
                if !random.chance(0.2) { mech.outbox.append((rig.now, .confirmation(deviceSeq: seq, fate: fate))) }
            }
            let due = mech.outbox.filter { $0.due <= rig.now }
            mech.outbox.removeAll { $0.due <= rig.now }
            if !due.isEmpty { handle(rig.feed(.mech(due.map(\.event))), mech: &mech, rig: rig, random: &random) }

            if let off = mech.offUntil, rig.now >= off { mech.offUntil = nil }
            switch mech.offUntil == nil ? Int.random(in: 0..<100, using: &random) : 100 {
            case 0..<60:
                // A coin; sometimes read late (the daemon was stalled); sometimes sent twice.
                mech.devseq += 1
                let lag = random.chance(0.2) ? Int64.random(in: 30...300, using: &random) : Int64.random(in: 0...5, using: &random)
                let sentAt = rig.now - .milliseconds(lag)
                mech.coins[mech.boot, default: [:]][mech.devseq] = ModelMech.Coin(sentAt: sentAt, bounces: false)
                var events = [CoreRig.reading(mech.devseq, sentAt: sentAt, diameter: 24 + Double(mech.devseq % 7) / 10)]
                if random.chance(0.05) { events.append(events[0]) }
                if random.chance(0.1) { rig.failures.append(random.chance(0.5) ? .busy(message: "locked") : .write(message: "I/O error")) }
                if journal && random.chance(0.05) { rig.crashAt = random.chance(0.5) ? .journalled : .answerWritten }
                handle(rig.feed(.mech(events)), mech: &mech, rig: rig, random: &random)
                rig.crashAt = nil  // only while this coin is decided
                if rig.crashed {
                    // Killed with the batch in the journal, perhaps answered, not on the ledger.
                    mech.outbox.removeAll()
                    rig.restart()
                    handle(rig.feed(.mech([.connected(path: "/dev/mech")])), mech: &mech, rig: rig, random: &random)
                    mech.outbox.append((rig.now + .milliseconds(1), .session(boot: mech.boot)))
                }
            case 60..<63:
                // The daemon restarts: the line's pending messages are lost with it.
                mech.outbox.removeAll()
                rig.restart()
                handle(rig.feed(.mech([.connected(path: "/dev/mech")])), mech: &mech, rig: rig, random: &random)
                mech.outbox.append((rig.now + .milliseconds(1), .session(boot: mech.boot)))
            case 67..<69:
                // The line goes down; the mech reboots while nobody listens (its POWERUP is lost);
                // the daemon may restart meanwhile; the line comes back, and the mech's next coin
                // may come before its SESSION answer.
                handle(rig.feed(.mech([.lost(path: "/dev/mech", reason: "hang-up")])), mech: &mech, rig: rig, random: &random)
                mech.reboot()
                if random.chance(0.5) { rig.restart() }
                handle(rig.feed(.mech([.connected(path: "/dev/mech")])), mech: &mech, rig: rig, random: &random)
                mech.outbox.append((rig.now + .milliseconds(Int64.random(in: 1...80, using: &random)), .session(boot: mech.boot)))
            case 69..<71:
                // A garbled sentence that passed the checksum: an earlier number of this boot with
                // another measurement. No such coin is in the mech; nothing may be credited for it.
                if mech.devseq > 0 {
                    let seq = UInt64.random(in: 1...mech.devseq, using: &random)
                    handle(rig.feed(.mech([CoreRig.reading(seq, sentAt: rig.now, diameter: 17.9, weight: 2.27)])), mech: &mech, rig: rig, random: &random)
                }
            case 65..<67:
                // The operator teaches: starts, commits (refused below ten samples) or aborts.
                let action: CoreInput = rig.core.teach == nil
                    ? .teachStart(TeachRequest(currency: "USD", code: "quarter", coins: 12, link: "usd", file: "/state/serial-USD.json"), by: "ops", ticket: Ticket(1))
                    : random.chance(0.5) ? .teachCommit(by: "ops", ticket: Ticket(2)) : .teachAbort(by: "ops", ticket: Ticket(3))
                handle(rig.feed(action), mech: &mech, rig: rig, random: &random)
            case 63..<65:
                // Power lost: coins on their way end by chance, the journal cannot tell.
                mech.reboot()
                mech.offUntil = rig.now + .milliseconds(300)
                mech.outbox.append((rig.now + .milliseconds(300), .powerUp(boot: mech.boot)))
            default:
                break
            }
            handle(rig.feed(.tick), mech: &mech, rig: rig, random: &random)
        }
        // Time passes; the mech answers; nothing should stay pending.
        for _ in 0..<400 where rig.core.snapshot.pending > 0 || !mech.outbox.isEmpty {
            rig.now = rig.now + .milliseconds(50)
            mech.expireDeadlines(now: rig.now)
            for (seq, coin) in mech.coins[mech.boot] ?? [:] {
                guard let until = coin.inFlightUntil, until <= rig.now else { continue }
                mech.coins[mech.boot]?[seq] = ModelMech.Coin(sentAt: coin.sentAt, fate: coin.bounces ? .returned : .stored, inFlightUntil: nil, bounces: coin.bounces)
            }
            let due = mech.outbox.filter { $0.due <= rig.now }
            mech.outbox.removeAll { $0.due <= rig.now }
            if !due.isEmpty { handle(rig.feed(.mech(due.map(\.event))), mech: &mech, rig: rig, random: &random) }
            handle(rig.feed(.tick), mech: &mech, rig: rig, random: &random)
        }

        // The ledger joined with the mech's truth, by (boot, devseq).
        let truth = mech.truth
        func name(_ key: FakeLedger.Key) -> String { "\(rig.ledger.boots[key.epoch].map(String.init) ?? "?")/\(key.deviceSeq)" }
        let credited = Set(rig.ledger.credits.keys.map(name))
        let unconfirmed = Set(rig.ledger.unconfirmed.map(name))
        for (key, count) in rig.ledger.credits where count > 1 { problems.append("doubled: \(name(key))") }
        for key in credited where truth[key] != true { problems.append("phantom: \(key) credited, fate \(truth[key].map { $0 ? "stored" : "returned" } ?? "unknown")") }
        for (key, stored) in truth where stored && !credited.contains(key) && !unconfirmed.contains(key) { problems.append("lost: \(key) stored, not credited") }
        for key in unconfirmed where !mech.unknown.contains(key) && truth[key] != nil {
            problems.append("unconfirmed without cause: \(key)")
        }
        if rig.core.snapshot.pending > 0 { problems.append("\(rig.core.snapshot.pending) coins still pending") }
        // Teach mode returns every coin: none of its decisions is an accept, none is credited.
        for decision in rig.ledger.decisions.values where decision.record.link == "teach" {
            if decision.accepted || rig.ledger.credits[decision.key] != nil { problems.append("taught coin \(name(decision.key)) accepted or credited") }
        }
        problems += rig.unrecordedAccepts
        return (problems, rig.ledger.decisions.values.filter { $0.record.link == "teach" }.count, rig.installed.count)
    }

    // With the journal, the core is also killed now and then between the journal's sync and the
    // ledger's commit: an accept may then follow either durable write, never neither.
    @Test("200 random sessions, without and with the decision journal: every accept answered after its decision was durable; lost = doubled = phantom = 0",
          arguments: [false, true])
    func randomSessions(journal: Bool) {
        var failing: [String] = []
        var taught = 0, installed = 0
        for seed in UInt64(1)...200 {
            let run = Self.run(seed: seed, journal: journal)
            if !run.problems.isEmpty { failing.append("seed \(seed): \(run.problems.prefix(5).joined(separator: "; "))") }
            taught += run.taught
            installed += run.installed
        }
        #expect(failing.isEmpty, "\(failing.prefix(10).joined(separator: "\n"))")
        // The sessions did teach, and committed now and then.
        #expect(taught > 1000 && installed > 10, "\(taught) coins taught, \(installed) calibrations installed")
    }
}
