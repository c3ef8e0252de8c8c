import CLinux
import CoinMechMDB
import CoinMechModel
import CoinMechSupport

#if canImport(Glibc)
import Glibc
#endif

/// Plays an MDB coin changer behind a USB/serial MDB master adapter (`MDBChangerDevice`) on a
/// pseudo-terminal from a scenario, and reports the ground truth (`MDBGroundTruth`):
/// `coinsim --protocol mdb`.
///
/// The host writes adapter lines (LF-terminated); each is answered after `replyMilliseconds`,
/// in order, with CR LF. Coins go in at the scenario's rate from `startMilliseconds` after the
/// host's first COIN TYPE, the last step of setting a changer up (however long the host took to
/// get there: a fixed time after it opened the device found a slow host's types still
/// disabled). The changer's currency is the scenario's.
///
/// Single-threaded: one `ppoll` loop over the pty and a signalfd, like `MechSimulator`.
public final class MDBSimulator {
    public typealias Options = SimulatorOptions

    /// How long the adapter takes to answer a line (the bus transaction and its own work).
    public static let replyMilliseconds = 2.0
    /// From the host's first COIN TYPE to the first coin.
    public static let startMilliseconds = 500.0

    private let options: Options
    private let scenario: Scenario
    private let announce: @Sendable (String) -> Void
    private var generator: InsertionGenerator
    private var changer: MDBChangerDevice
    private var truth: MDBGroundTruth
    private var terminal: PseudoTerminal?
    private var connected = false
    private var pending: [UInt8] = []
    /// Replies on their way, oldest first, with when each is due.
    private var outgoing: [(deliverAt: UInt64, line: String)] = []
    private var recorder: TraceWriter?
    private let start: UInt64
    /// Kept coins (indices into the truth's coins) the changer has not reported yet, oldest first.
    private var unreported: [Int] = []
    /// Kept coins whose POLL reply is to be lost (`mdb.faults.lost_poll_reply_at`).
    private var loseReplyOf: Set<Int> = []
    /// When the payout under way pays its next coin; coins paid out in the session.
    private var nextPayment: UInt64?
    private var coinsPaidOut = 0
    /// The scenario's payout faults, each fired once.
    private var jamAfter: Int?
    private var resetAfter: Int?
    /// Draws the line's and the tubes' faults, from the scenario's seed.
    private var faultRandom: SplitMix64

    public init(scenario: Scenario, options: Options = Options(), announce: @escaping @Sendable (String) -> Void) throws(SimulatorError) {
        guard var settings = MDBChangerDevice.Settings(currency: scenario.currency) else {
            throw .trace("no MDB changer for currency \(scenario.currency)")
        }
        if scenario.mdb.alternativePayout { settings.features.insert(.alternativePayout) }
        self.options = options
        self.scenario = scenario
        self.announce = announce
        generator = InsertionGenerator(scenario: scenario)
        changer = MDBChangerDevice(settings: settings)
        truth = MDBGroundTruth(scenario: scenario.name, seed: scenario.seed, currency: scenario.currency,
                               typeValues: (0..<settings.credits.count).compactMap { settings.valueMinor(ofType: $0) })
        start = Instant.now.nanoseconds
        jamAfter = scenario.mdb.faults.payoutJamAfter
        resetAfter = scenario.mdb.faults.resetDuringPayoutAfter
        faultRandom = SplitMix64(seed: scenario.seed ^ 0x3DB0_C4A6_6E5F_0042)
    }

    /// Runs the session to its end (or SIGTERM/SIGINT) and returns the ground truth.
    public func run() throws(SimulatorError) -> MDBGroundTruth {
        let (signals, terminal) = try (SimulatorSignals(), PseudoTerminal.offer(options, recorder: &recorder, connections: &truth.connections, announce: announce))
        self.terminal = terminal

        var nextInsertion: UInt64?
        var scheduled = false
        var end = SessionEnd(options: options, start: start)

        loop: while true {
            let now = Instant.now.nanoseconds
            let wake = end.wake(now: now, connected: connected, dues: [connected ? nextInsertion : nil, outgoing.first?.deliverAt, nextPayment])
            let turn = try signals.wait(master: terminal.master, until: wake, now: now)
            let woke = Instant.now.nanoseconds
            if turn.stop {
                truth.ended = "signal"
                nextInsertion = nil
                end.stop(at: woke)
            }
            if turn.readable, let bytes = terminal.read() { readFromHost(bytes, at: woke) }
            if turn.hungUp {
                if connected {
                    connected = false
                    truth.connections.hangups += 1
                    outgoing.removeAll()  // nobody reads the line
                }
                usleep(5_000)
            } else if !connected && turn.open {
                connected = true
                truth.connections.connects += 1
            }
            if !connected, end.hostTimedOut(at: woke, everConnected: truth.connections.connects > 0) {
                truth.ended = "host_timeout"
                break loop
            }
            deliverOutgoing()
            if !scheduled, changer.coinTypeSet {
                scheduled = true
                nextInsertion = Instant.now.nanoseconds + UInt64(Self.startMilliseconds * 1e6)
            }
            payOut(at: Instant.now.nanoseconds)
            if connected, !end.isStopping, let due = nextInsertion, Instant.now.nanoseconds >= due {
                if scenario.coins != 0 && truth.sent.insertions >= scenario.coins {
                    nextInsertion = nil
                    end.lastCoin(at: Instant.now.nanoseconds)
                } else {
                    insertOne()
                    nextInsertion = Instant.now.nanoseconds + UInt64(generator.gap(after: truth.sent.insertions) * 1e9)
                }
            }
            if end.isOver(at: Instant.now.nanoseconds, connected: connected, quiet: outgoing.isEmpty) { break loop }
        }
        recordEndedPayouts()
        truth.tubesAtEnd = changer.tubes
        truth.enabledAtEnd = Int(changer.enabled)
        truth.durationS = Double(Instant.now.nanoseconds - start) / 1e9
        return truth
    }

    /// Pays the payout under way at the changer's pace, host or no host (a changer pays out
    /// what it was told whoever polls it), with the scenario's jam and reset.
    private func payOut(at now: UInt64) {
        guard changer.isPaying else {
            nextPayment = nil
            return recordEndedPayouts()
        }
        guard let due = nextPayment else {
            nextPayment = now + UInt64(scenario.mdb.payIntervalMilliseconds) * 1_000_000
            return
        }
        guard now >= due else { return }
        if jamAfter == coinsPaidOut {
            jamAfter = nil
            changer.jamPayout()
        } else if resetAfter == coinsPaidOut {
            resetAfter = nil
            changer.reset()
        } else {
            changer.payOne()
            coinsPaidOut += 1
        }
        nextPayment = !changer.isPaying ? nil : now + UInt64(scenario.mdb.payIntervalMilliseconds) * 1_000_000
        recordEndedPayouts()
    }

    private func recordEndedPayouts() {
        for (payout, how) in changer.takeEndedPayouts() {
            if payout.paid > 0, scenario.mdb.faults.tubeLag > 0, Double.random(in: 0..<1, using: &faultRandom) < scenario.mdb.faults.tubeLag {
                changer.tubeSensorLag = (payout.type, 1)
                truth.tubeLags += 1
            }
            let value = changer.settings.valueMinor(ofType: payout.type) ?? 0
            truth.payouts.append(MDBGroundTruth.Payout(type: payout.type, asked: payout.asked, paid: payout.paid, valueMinor: value, ended: how.rawValue,
                                                       alternative: payout.alternative))
            truth.paidOutValue[scenario.currency, default: 0] += Int64(payout.paid) * value
        }
        for (payout, how) in changer.takeEndedValuePayouts() {
            let paid = payout.paid.enumerated().reduce(Int64(0)) { $0 + Int64($1.element) * (changer.settings.valueMinor(ofType: $1.offset) ?? 0) }
            truth.valuePayouts.append(MDBGroundTruth.ValuePayout(number: payout.number, askedMinor: Int64(payout.askedScaled) * Int64(changer.settings.scalingFactor),
                                                                 paidMinor: paid, ended: how.rawValue))
        }
    }

    private func insertOne() {
        let insertion = generator.next()
        truth.sent.insertions += 1
        truth.sent.byKind[insertion.kind.description, default: 0] += 1
        let value = insertion.kind.creditableValue
        var type: Int?
        var fate: MDBChangerDevice.Fate = .rejected
        switch insertion.kind {
        case .coin:
            type = value.flatMap { changer.settings.type(ofValue: $0.valueMinor) }
            fate = changer.insert(type: type)
        case .slug:
            changer.insertSlug()
            truth.outcomes.slugs += 1
        case .washer, .foreign, .fraud:
            fate = changer.insert(type: nil)
        }
        let kept = fate != .rejected
        switch fate {
        case .tube: truth.outcomes.tube += 1
        case .cashBox: truth.outcomes.cashBox += 1
        case .rejected: truth.outcomes.rejected += 1
        }
        if kept, let value { truth.keptValue[value.currency, default: 0] += value.valueMinor }
        truth.coins.append(MDBGroundTruth.Coin(
            insertion: insertion.number, kind: insertion.kind.description, currency: value?.currency, valueMinor: value?.valueMinor,
            type: type, fate: fate == .tube ? "tube" : fate == .cashBox ? "cash_box" : "rejected"))
        if kept, type != nil {
            unreported.append(truth.coins.count - 1)
            if scenario.mdb.faults.lostPollReplyAt.contains(insertion.number) { loseReplyOf.insert(truth.coins.count - 1) }
        }
        if let status = scenario.mdb.faults.statusAt[insertion.number] {
            changer.report(status)
            truth.statusesReported.append(Int(status.rawValue))
        }
    }

    /// The host's bytes: each whole line is answered, in order, after the adapter's time.
    private func readFromHost(_ bytes: [UInt8], at now: UInt64) {
        recorder?.write(TraceEntry(tUs: Int64((now - start) / 1000), dir: "rx", bytes: bytes))
        pending += bytes
        while let end = pending.firstIndex(of: UInt8(ascii: "\n")) {
            let line = String(decoding: pending[..<end], as: UTF8.self)
            pending.removeSubrange(...end)
            truth.hostLines += 1
            if MDBAdapterCommand(line: line[...]) == nil { truth.unreadableLines += 1 }
            let reply = changer.handle(line[...])
            if reportsLostReply(reply, to: line) { continue }
            if scenario.mdb.faults.lostReply > 0, !reportsCoins(reply, to: line), Double.random(in: 0..<1, using: &faultRandom) < scenario.mdb.faults.lostReply {
                truth.lostReplies += 1
                continue
            }
            let after = max(now, outgoing.last?.deliverAt ?? 0) &+ UInt64(Self.replyMilliseconds * 1e6)
            outgoing.append((after, reply.text + "\r\n"))
        }
        if pending.count > 256 { pending.removeAll() }  // no line end in sight: not a host
    }

    /// Takes the coins a POLL reply reports off `unreported`; true if the reply is to be lost
    /// (the changer has forgotten them all the same), which marks them in the truth.
    private func reportsLostReply(_ reply: MDBAdapterReply, to line: String) -> Bool {
        guard case .transaction(let transaction)? = MDBAdapterCommand(line: line[...]), transaction.address == MDBChangerCommand.address,
              transaction.command & 0x07 == MDBChangerCommand.pollCode, case .peripheral(.data(let bytes)) = reply else { return false }
        let deposits = MDBPollReply(data: bytes).events.filter { if case .deposited(_, let routing, _) = $0 { routing.isKept } else { false } }.count
        let reported = unreported.prefix(deposits)
        unreported.removeFirst(reported.count)
        guard reported.contains(where: loseReplyOf.contains) else { return false }
        for index in reported { truth.coins[index].replyLost = true }
        truth.lostPollReplies += 1
        return true
    }

    /// Whether `reply` is a POLL's that reports a coin the changer kept.
    private func reportsCoins(_ reply: MDBAdapterReply, to line: String) -> Bool {
        guard case .transaction(let transaction)? = MDBAdapterCommand(line: line[...]), transaction.address == MDBChangerCommand.address,
              transaction.command & 0x07 == MDBChangerCommand.pollCode, case .peripheral(.data(let bytes)) = reply else { return false }
        return MDBPollReply(data: bytes).events.contains { if case .deposited(_, let routing, _) = $0 { routing.isKept } else { false } }
    }

    private func deliverOutgoing() {
        guard let terminal, connected else { return }
        let now = Instant.now.nanoseconds
        while let next = outgoing.first, next.deliverAt <= now {
            outgoing.removeFirst()
            let bytes = Array(next.line.utf8)
            recorder?.write(TraceEntry(tUs: Int64((now - start) / 1000), dir: "tx", bytes: bytes))
            _ = terminal.write(bytes)
        }
    }
}
