import CLinux
import CoinMechChain
import CoinMechFailpoints
import CoinMechHotplug
import CoinMechLedger
import CoinMechPlugins
import CoinMechProtocol
import CoinMechPublisher
import CoinMechSerial
import CoinMechSources
import Foundation
import Logging
import Synchronization

/// The heart of the daemon: reads the mech, decides each reading on the current chain,
/// commits the decisions, only then tells the mech, and credits a coin when the mech says it
/// stored it.
///
/// Runs on its own thread (`run()` blocks) and owns the mech, the sequence tracker, the
/// pending coins and the answers. Everything that arrives in one read is decided, committed in
/// one transaction (group commit), answered, and only then published. If the ledger cannot
/// write, every coin is returned and the mech is inhibited until a write succeeds again.
public final class DecidingLoop: @unchecked Sendable {
    // @unchecked: every `var` here is touched only by the loop's own thread (`run()` and what it
    // calls); other threads use `stop()`, `submit()`, `counters` (atomics) and `state` (a Mutex).
    private let mech: any Mech
    /// udev, when it can be watched: removals and arrivals of the mech's device.
    private var udev: UdevMonitor?
    private var hotplug: HotplugTracker?
    private let sourceName: String
    private let answerDeadline: AnswerDeadline?
    private let credit: CreditRule
    private let chain: ChainHolder
    private let ledger: Ledger
    private let logger: Logger
    private let failpoints: Failpoints
    private var tracker: DeviceSequenceTracker
    private var epochs: EpochBook
    private var pending: PendingCoins
    /// Answers given in the current epoch, by device seq, for duplicate sentences.
    private var answers: [UInt64: Bool] = [:]
    private var operatorInhibit = false
    /// Why a link out of service keeps the mech inhibited (nil: none does).
    private var pluginInhibit: String?
    private var pluginHealth = PluginHealthReview()
    private var ledgerFailingSince: UInt64?
    private var lastRecoveryAttempt: UInt64 = 0
    /// Since the mech connected, waiting for it to name its session before querying.
    private var awaitingSessionSince: UInt64?
    /// Events (not decisions) a failed commit could not record: recorded with the next batch.
    private var carriedOver: [LedgerEntry] = []
    /// `stop()` and `submit()` wake the loop's `poll` through it.
    private let wakePipe = WakePipe()
    private let stopping = Atomic<Bool>(false)
    private let hub: EventHub
    private let commands = Mutex<[Command]>([])
    /// Counters for status reports.
    public let counters = Counters()
    /// Longest sleep in `poll`, so the heartbeat stays fresh for the watchdog.
    public var heartbeatMilliseconds: Int32 = 1000
    /// What `status` reports, updated by the loop after each turn.
    public let state = Mutex(State())

    /// How long to wait for the mech's `SESSION` after connecting before querying anyway.
    static let sessionWaitNanoseconds: UInt64 = 2_000_000_000

    /// A request from another thread, run by the loop between batches so that every ledger
    /// write comes from this thread and events are published in `seq` order.
    public enum Command: Sendable {
        case inhibit(Bool, by: String, completion: @Sendable (Result<JSON, CommandError>) -> Void)
        case collect(by: String, completion: @Sendable (Result<JSON, CommandError>) -> Void)
        /// Record a reload built by the reloader, then swap its chain in.
        case install(Chain, completion: @Sendable (Result<JSON, CommandError>) -> Void)
        /// Record that a reload failed (the current chain stays).
        case reloadFailed(reason: String, completion: @Sendable (Result<JSON, CommandError>) -> Void)
    }

    /// The loop's state as `status` shows it.
    public struct State: Sendable {
        public var connected = false
        public var disconnectedReason: String?
        public var inhibited = false
        /// A link hung or quarantined keeps the mech inhibited: which, and why.
        public var pluginInhibit: String?
        public var ledgerFailing = false
        /// Accepts waiting for the mech's confirmation.
        public var pending = 0
    }

    /// What the deciding loop has done since start, readable from any thread. Counts coins,
    /// not sentences or answers.
    public final class Counters: Sendable {
        public let readings = Atomic<UInt64>(0)
        /// Accepts answered to the mech (credited when it stores them).
        public let accepted = Atomic<UInt64>(0)
        public let rejected = Atomic<UInt64>(0)
        /// Accepted coins the mech stored: customer credit.
        public let credited = Atomic<UInt64>(0)
        /// Accepted coins the mech returned after all.
        public let returnedAfterAccept = Atomic<UInt64>(0)
        /// Accepted coins no confirmation could settle.
        public let unconfirmed = Atomic<UInt64>(0)
        public let duplicates = Atomic<UInt64>(0)
        public let protocolErrors = Atomic<UInt64>(0)
        /// Accepts recorded as `deadline_passed` rejections: decided too late to reach the mech.
        public let deadlineWithdrawn = Atomic<UInt64>(0)
        /// Accepts answered after the mech's deadline although committed (`late_answer` events).
        public let lateAnswers = Atomic<UInt64>(0)
        /// Queries sent about pending coins.
        public let queries = Atomic<UInt64>(0)
        /// Mech connections made (the first one included), and those after a lost one.
        public let connects = Atomic<UInt64>(0)
        public let reconnects = Atomic<UInt64>(0)
        /// CLOCK_MONOTONIC ns of the loop's last turn: a stuck loop stops advancing it.
        public let heartbeat = Atomic<UInt64>(0)
        init() {}
    }

    public init(configuration: DaemonConfiguration, chain: ChainHolder, ledger: Ledger, hub: EventHub, logger: Logger,
                failpoints: Failpoints = .none) throws(LedgerError) {
        self.hub = hub
        sourceName = configuration.source.name
        answerDeadline = configuration.source.answerDeadline
        self.chain = chain
        self.ledger = ledger
        self.logger = logger
        self.failpoints = failpoints
        chain.alarm.onRaise { [wakePipe] in wakePipe.wake() }
        let state = try ledger.sourceState(sourceName)
        mech = Self.mech(for: configuration.source, lastDeviceSeq: state.lastDeviceSeq, failpoints: failpoints)
        credit = mech.confirmsCoins ? .onConfirmation : .atOnce
        if let match = configuration.source.hotplug {
            // The monitor receives before the devices are enumerated: nothing falls in between.
            do throws(UdevError) {
                let monitor = try UdevMonitor(subsystem: match.subsystem)
                var tracker = HotplugTracker(match: match)
                for event in monitor.enumerate() { _ = tracker.handle(event) }
                udev = monitor
                hotplug = tracker
            } catch {
                logger.warning("no udev hotplug events; reconnecting by retrying", metadata: ["error": "\(error)"])
            }
        }
        tracker = DeviceSequenceTracker(
            epoch: state.epoch, lastSeq: state.lastDeviceSeq,
            recent: state.recent.map { ($0.deviceSeq, Measurement(diameterMM: $0.diameterMM, weightG: $0.weightG, thicknessMM: $0.thicknessMM, channel: $0.channel)) })
        for decision in state.recent { answers[decision.deviceSeq] = decision.accepted }
        epochs = EpochBook(boots: try ledger.boots(source: sourceName))
        pending = PendingCoins(confirmationWindowNanoseconds: configuration.source.confirmationWindowNanoseconds)
        let now = Self.now()
        // Fresh from the start: the watchdog must not take a loop that has not begun for a stuck one.
        counters.heartbeat.store(now, ordering: .relaxed)
        for coin in try ledger.pendingCoins(source: sourceName) {
            pending.add(seq: coin.seq, epoch: coin.epoch, deviceSeq: coin.deviceSeq, answeredAt: now, restored: true)
        }
        if !pending.isEmpty {
            logger.notice("accepted coins from before the restart wait for the mech's word", metadata: ["pending": "\(pending.count)"])
        }
    }

    /// The mech the configuration describes.
    static func mech(for source: DaemonConfiguration.Source, lastDeviceSeq: UInt64?, failpoints: Failpoints) -> any Mech {
        switch source.kind {
        case "gpio-replay":
            return GPIOMech(input: ReplayEdgeInput(path: source.device, speed: source.replaySpeed), decoder: source.decoder, lastDeviceSeq: lastDeviceSeq)
        case "gpio":
            let gate = source.acceptGateLine.map { ($0, source.acceptPulseMilliseconds) }
            let inhibit = source.inhibitLine.map { ($0, source.inhibitActiveLow) }
            let scale = source.scale.map { ($0.data, $0.clock, $0.decoder) }
            return GPIOMech(input: GPIOEdgeInput(chip: source.device, lines: source.inputLines, acceptGate: gate, inhibit: inhibit, scale: scale),
                            decoder: source.decoder, lastDeviceSeq: lastDeviceSeq)
        default:
            let serial = SerialMech(path: source.device, baud: source.baud, confirmsCoins: source.confirmations, failpoints: failpoints)
            if case .usb = source.hotplug { serial.followsDevnode = true }
            return serial
        }
    }

    /// Asks `run()` to finish the reading in hand, commit, and return.
    public func stop() {
        stopping.store(true, ordering: .sequentiallyConsistent)
        wake()
    }

    /// Queues `command` for the loop; its completion runs on the loop's thread.
    public func submit(_ command: Command) {
        commands.withLock { $0.append(command) }
        wake()
    }

    private func wake() { wakePipe.wake() }

    /// Runs until `stop()`.
    public func run() {
        logger.info("deciding", metadata: [
            "device": "\(mech.location)", "chain_generation": "\(chain.current.generation)",
            "credit": "\(credit == .onConfirmation ? "when the mech stores the coin" : "with the answer")",
        ])
        if credit == .atOnce, !pending.isEmpty {
            // The source was configured to confirm coins before; it no longer can.
            settle(pending.all.map {
                PendingCoins.Settlement(coin: $0, resolution: .unconfirmed, message: "the source no longer confirms coins (source.confirmations is off)")
            })
        }
        reviewPluginHealth()
        while !stopping.load(ordering: .sequentiallyConsistent) {
            let now = Self.now()
            counters.heartbeat.store(now, ordering: .relaxed)
            var events = mech.poll(now: now)
            if events.isEmpty {
                events = waitForEvents(now: now)
            }
            handle(events)
            queryPendingCoins()
            runCommands()
            reviewPluginHealth()
            retryLedgerIfFailing()
            publishState()
        }
        // Shutting down: the mech returns coins by itself until the daemon is back.
        mech.setInhibit(true)
        handle(mech.disconnect(reason: "daemon stopping", now: Self.now()))
        runCommands()
        let errors = mech.frameErrors
        _ = commit([.event(.shutdown, source: sourceName, detail: [
            "readings": "\(counters.readings.load(ordering: .relaxed))", "duplicates": "\(counters.duplicates.load(ordering: .relaxed))",
            "garbage_bytes": "\(errors.garbageBytes)", "bad_checksums": "\(errors.badChecksums)", "truncated": "\(errors.truncated)",
            "overlong": "\(errors.overlong)", "malformed": "\(errors.malformed)", "pending": "\(pending.count)",
        ])], publish: true)
        logger.info("deciding loop stopped")
    }

    private func waitForEvents(now: UInt64) -> [MechEvent] {
        var descriptors = [pollfd(fd: wakePipe.readEnd, events: Int16(POLLIN), revents: 0)]
        descriptors.append(pollfd(fd: udev?.descriptor ?? -1, events: Int16(POLLIN), revents: 0))
        if let fd = mech.descriptor { descriptors.append(pollfd(fd: fd, events: Int16(POLLIN), revents: 0)) }
        var timeoutMs: Int32 = heartbeatMilliseconds
        for next in [mech.nextWake, mech.isConnected ? pending.nextDue : nil, awaitingSessionSince.map { $0 &+ Self.sessionWaitNanoseconds }] {
            if let next { timeoutMs = min(timeoutMs, Int32(clamping: next > now ? (next - now) / 1_000_000 + 1 : 0)) }
        }
        if ledgerFailingSince != nil { timeoutMs = min(timeoutMs, 1000) }
        let ready = poll(&descriptors, nfds_t(descriptors.count), timeoutMs)
        guard ready > 0 else { return [] }
        if descriptors[0].revents != 0 { wakePipe.drain() }
        var events: [MechEvent] = []
        if descriptors[1].revents != 0, let udev {
            while let event = udev.receive() {
                if let change = hotplug?.handle(event) {
                    logger.notice("udev: mech device \(change)")
                    events += mech.hotplug(change, now: Self.now())
                }
            }
        }
        if descriptors.count > 2 && descriptors[2].revents != 0 {
            let hungUp = descriptors[2].revents & Int16(POLLHUP | POLLERR | POLLNVAL) != 0
            events += mech.readEvents(now: Self.now(), hungUp: hungUp)
        }
        return events
    }

    // MARK: A batch

    /// One reading of the batch being decided.
    private struct Decided {
        var entryIndex: Int
        var reading: MechReading
        var epoch: Int64
        var decision: Decision
    }

    /// An answer owed to the mech for a sentence of the batch.
    private enum Owed {
        /// The reading decided in this batch at `decided[index]`.
        case decided(Int)
        /// A repeated sentence: answered as its coin was (`original` in this batch, or `answer`).
        case repeated(seq: UInt64, original: Int?, answer: Bool)
    }

    /// Decides every reading among `events`, records the batch in one transaction, answers,
    /// then publishes. Confirmations settle pending coins in the same transaction.
    func handle(_ events: [MechEvent]) {
        guard !events.isEmpty else { return }
        var batch = carriedOver
        carriedOver = []
        var decided: [Decided] = []
        var owed: [Owed] = []
        var settlements: [PendingCoins.Settlement] = []
        /// Device seqs decided in this batch, for a sentence repeated within it.
        var inBatch: [UInt64: Int] = [:]
        let current = chain.current
        for event in events {
            switch event {
            case .connected(let path):
                logger.notice("mech connected", metadata: ["device": "\(path)"])
                if counters.connects.add(1, ordering: .relaxed).newValue > 1 { counters.reconnects.add(1, ordering: .relaxed) }
                batch.append(.event(.sourceConnected, source: sourceName, detail: ["device": path]))
                mech.setInhibit(mechInhibited)
                awaitingSessionSince = credit == .onConfirmation ? Self.now() : nil
            case .lost(let path, let reason):
                logger.warning("mech lost", metadata: ["device": "\(path)", "reason": "\(reason)"])
                batch.append(.event(.sourceLost, source: sourceName, detail: ["device": path, "reason": reason]))
            case .powerUp(let boot):
                tracker.powerUp()
                epochs.record(epoch: tracker.epoch, boot: boot)
                answers.removeAll()
                inBatch.removeAll()
                logger.notice("mech powered up", metadata: ["epoch": "\(tracker.epoch)", "boot": "\(boot.map(String.init) ?? "?")"])
                var detail = ["epoch": "\(tracker.epoch)"]
                if let boot { detail["boot"] = "\(boot)" }
                batch.append(.event(.mechPowerUp, source: sourceName, detail: detail))
            case .session(let boot):
                switch epochs.session(boot, currentEpoch: tracker.epoch) {
                case .same:
                    break
                case .assigned:
                    epochs.record(epoch: tracker.epoch, boot: boot)
                    batch.append(.event(.mechSession, source: sourceName, detail: ["epoch": "\(tracker.epoch)", "boot": "\(boot)"]))
                case .newEpoch:
                    tracker.powerUp()
                    epochs.record(epoch: tracker.epoch, boot: boot)
                    answers.removeAll()
                    inBatch.removeAll()
                    logger.warning("the mech powered up while the daemon was away: new epoch", metadata: ["epoch": "\(tracker.epoch)", "boot": "\(boot)"])
                    batch.append(.event(.mechPowerUp, source: sourceName, detail: ["epoch": "\(tracker.epoch)", "boot": "\(boot)", "implied": "true"]))
                }
                sessionKnown()
                settlements += pending.unaskable(knownBoots: epochs.boots)
            case .status(let status, let detail):
                logger.warning("mech status", metadata: ["status": "\(status.rawValue)", "detail": "\(detail ?? "")"])
                batch.append(.event(.mechStatus, source: sourceName, detail: ["status": status.rawValue.lowercased(), "detail": detail ?? ""]))
            case .protocolError(let error):
                counters.protocolErrors.add(1, ordering: .relaxed)
                logger.warning("bad data from mech", metadata: ["error": "\(error)"])
            case .confirmation(let seq, let fate):
                failpoints.hit(.confirmationReceived)
                if let settlement = pending.settle(epoch: tracker.epoch, deviceSeq: seq, fate: fate, fromJournal: false) {
                    settlements.append(settlement)
                } else {
                    logger.debug("confirmation for a coin that is not pending", metadata: ["devseq": "\(seq)", "fate": "\(fate)"])
                }
            case .journal(let boot, let seq, let fate):
                failpoints.hit(.confirmationReceived)
                if let epoch = epochs.epoch(ofBoot: boot),
                   let settlement = pending.settle(epoch: epoch, deviceSeq: seq, fate: fate, fromJournal: true) {
                    settlements.append(settlement)
                } else {
                    logger.debug("journal answer for a coin that is not pending", metadata: ["boot": "\(boot)", "devseq": "\(seq)", "fate": "\(fate)"])
                }
            case .reading(let reading):
                let epoch: Int64
                switch tracker.classify(reading.deviceSeq, reading.measurement) {
                case .duplicate:
                    counters.duplicates.add(1, ordering: .relaxed)
                    let original = inBatch[reading.deviceSeq]
                    let answer = answers[reading.deviceSeq] ?? false
                    logger.info("duplicate sentence answered again", metadata: ["devseq": "\(reading.deviceSeq)"])
                    owed.append(.repeated(seq: reading.deviceSeq, original: original, answer: answer))
                    continue
                case .impliedPowerUp(let newEpoch):
                    answers.removeAll()
                    inBatch.removeAll()
                    logger.warning("device numbers went back without a power-up: new epoch", metadata: ["epoch": "\(newEpoch)"])
                    batch.append(.event(.mechPowerUp, source: sourceName, detail: ["epoch": "\(newEpoch)", "implied": "true"]))
                    epoch = newEpoch
                    // Which session is this? The mech's answer names its boot for the new epoch.
                    if credit == .onConfirmation { mech.askSession() }
                case .new(let current):
                    epoch = current
                }
                let decision: Decision
                if let rejection = reading.rejection {
                    decision = Decision(rejectedBy: "source", chainGeneration: current.generation, reason: rejection,
                                        message: "the source could not measure this coin reliably")
                } else if operatorInhibit {
                    decision = Decision(rejectedBy: "inhibit", chainGeneration: current.generation, reason: "inhibited", message: "the mech is inhibited")
                } else if let pluginInhibit {
                    // Fail closed: no link decides while one of them is out of service.
                    decision = Decision(rejectedBy: "inhibit", chainGeneration: current.generation, reason: "inhibited", message: "the mech is inhibited: \(pluginInhibit)")
                } else {
                    decision = current.decide(Reading(
                        deviceSeq: reading.deviceSeq, timestampNanoseconds: reading.sentAt, diameterMM: reading.measurement.diameterMM,
                        weightG: reading.measurement.weightG, thicknessMM: reading.measurement.thicknessMM,
                        channel: reading.measurement.channel, source: sourceName))
                }
                counters.readings.add(1, ordering: .relaxed)
                logger.debug("decision", metadata: [
                    "devseq": "\(reading.deviceSeq)", "epoch": "\(epoch)", "verdict": "\(decision.verdict)", "link": "\(decision.linkName)",
                    "generation": "\(decision.chainGeneration)", "waited_us": "\((Self.now() &- reading.sentAt) / 1000)",
                ])
                inBatch[reading.deviceSeq] = decided.count
                owed.append(.decided(decided.count))
                decided.append(Decided(entryIndex: -1, reading: reading, epoch: epoch, decision: decision))
                answers[reading.deviceSeq] = decision.isAccept
            }
        }

        // Which accepts can still reach the mech in time, in which order the answers go.
        let planned = AnswerPlan(owed.enumerated().map { position, owed in
            switch owed {
            case .decided(let index):
                let accept = decided[index].decision.isAccept
                return AnswerPlan.Answer(index: position, accept: accept, sentAt: decided[index].reading.sentAt,
                                         transit: mech.answerTransitNanoseconds(deviceSeq: decided[index].reading.deviceSeq))
            case .repeated(let seq, let original, let answer):
                let accept = original.map { decided[$0].decision.isAccept } ?? answer
                let sentAt = original.map { decided[$0].reading.sentAt } ?? Self.now()
                return AnswerPlan.Answer(index: position, accept: accept, sentAt: sentAt, transit: mech.answerTransitNanoseconds(deviceSeq: seq))
            }
        }, now: Self.now(), deadline: answerDeadline)
        for position in planned.withdrawn {
            guard case .decided(let index) = owed[position] else { continue }
            decided[index].decision = withdrawn(decided[index])
            answers[decided[index].reading.deviceSeq] = false
        }
        for index in decided.indices {
            decided[index].entryIndex = batch.count
            batch.append(.decision(source: sourceName, epoch: decided[index].epoch, reading: Reading(
                deviceSeq: decided[index].reading.deviceSeq, timestampNanoseconds: decided[index].reading.sentAt,
                diameterMM: decided[index].reading.measurement.diameterMM, weightG: decided[index].reading.measurement.weightG,
                thicknessMM: decided[index].reading.measurement.thicknessMM, channel: decided[index].reading.measurement.channel,
                source: sourceName), decision: decided[index].decision, credit: credit))
        }
        let settlementEntries = settlements.map { LedgerEntry.resolve(decisionSeq: $0.coin.seq, $0.resolution, message: $0.message) }
        batch += settlementEntries

        failpoints.hit(.beforeCommit)
        let budget = planned.commitBudgetMilliseconds(now: Self.now(), deadline: answerDeadline)
        let result = commit(batch, publish: false, busyTimeoutMilliseconds: budget ?? (decided.isEmpty ? Ledger.defaultBusyTimeoutMilliseconds : 1000))
        if result != nil {
            if !settlements.isEmpty { failpoints.hit(.confirmationCommitted) }
            failpoints.hit(.afterCommit)
        }

        // Answers, in the planned order. No accept reaches the mech unless its decision is on disk.
        var accepted: [Int: Bool] = [:]
        for index in decided.indices {
            var accept = decided[index].decision.isAccept && result != nil
            if let result, case .duplicate(_, let wasAccepted) = result.outcomes[decided[index].entryIndex] {
                // Already on the ledger (decided before a restart): answer as recorded.
                accept = wasAccepted
            }
            accepted[index] = accept
        }
        var late: [LedgerEntry] = []
        /// When the line is free again: answers written together queue on it.
        var lineFreeAt: UInt64 = 0
        for answer in planned.order {
            let seq: UInt64, accept: Bool
            switch owed[answer.index] {
            case .decided(let index):
                seq = decided[index].reading.deviceSeq
                accept = accepted[index] ?? false
            case .repeated(let repeatedSeq, let original, _):
                seq = repeatedSeq
                accept = original.map { accepted[$0] ?? false } ?? (answer.accept && result != nil)
            }
            if !mech.answer(deviceSeq: seq, accept: accept) {
                logger.warning("could not answer the mech", metadata: ["devseq": "\(seq)", "accept": "\(accept)"])
            }
            lineFreeAt = max(lineFreeAt, Self.now()) &+ answer.transit
            guard case .decided(let index) = owed[answer.index] else { continue }
            if accept {
                counters.accepted.add(1, ordering: .relaxed)
                if let deadline = answerDeadline, let lateBy = deadline.lateBy(receivedAt: decided[index].reading.sentAt, answeredAt: lineFreeAt) {
                    let ms = String(format: "%.1f", Double(lateBy) / 1e6)
                    logger.error("accept reached the mech after its deadline: the mech returns the coin",
                                 metadata: ["devseq": "\(seq)", "epoch": "\(decided[index].epoch)", "late_by_ms": "\(ms)"])
                    late.append(.event(.lateAnswer, source: sourceName, detail: ["epoch": "\(decided[index].epoch)", "devseq": "\(seq)", "late_by_ms": ms]))
                }
            } else {
                counters.rejected.add(1, ordering: .relaxed)
            }
        }
        failpoints.hit(.answerWritten)

        guard let result else {
            // Nothing was recorded: the accepts were answered "return"; forget them.
            for item in decided where item.decision.isAccept { answers[item.reading.deviceSeq] = false }
            return
        }
        // Accepts now wait for the mech; settled coins leave the pending set.
        let answeredAt = Self.now()
        for (index, item) in decided.enumerated() where accepted[index] == true {
            guard case .recorded(let events) = result.outcomes[item.entryIndex], let decisionEvent = events.first else { continue }
            if credit == .onConfirmation {
                pending.add(seq: decisionEvent.seq, epoch: item.epoch, deviceSeq: item.reading.deviceSeq, answeredAt: answeredAt)
            } else {
                counters.credited.add(1, ordering: .relaxed)
            }
        }
        countSettlements(settlements, outcomes: Array(result.outcomes.suffix(settlementEntries.count)))
        pending.settled(settlements)
        hub.publish(result.events)
        failpoints.hit(.published)
        if !late.isEmpty {
            counters.lateAnswers.add(UInt64(late.count), ordering: .relaxed)
            commit(late, publish: true)
        }
    }

    /// The decision recorded instead of an accept that could no longer reach the mech in time.
    private func withdrawn(_ item: Decided) -> Decision {
        let waited = String(format: "%.1f", Double(Self.now() &- item.reading.sentAt) / 1e6)
        let deadlineMs = String(format: "%g", Double(answerDeadline?.deadlineNanoseconds ?? 0) / 1e6)
        counters.deadlineWithdrawn.add(1, ordering: .relaxed)
        logger.warning("accept withdrawn: too late for the mech's deadline", metadata: [
            "devseq": "\(item.reading.deviceSeq)", "waited_ms": "\(waited)", "link": "\(item.decision.linkName)",
        ])
        return Decision(rejectedBy: "deadline", chainGeneration: item.decision.chainGeneration, reason: "deadline_passed",
                        message: "decided \(waited) ms after the reading left the mech, too late for its \(deadlineMs) ms deadline (\(item.decision.linkName) accepted it)")
    }

    private func countSettlements(_ settlements: [PendingCoins.Settlement], outcomes: [EntryOutcome]) {
        for (settlement, outcome) in zip(settlements, outcomes) {
            guard case .recorded = outcome else { continue }
            switch settlement.resolution {
            case .credited: counters.credited.add(1, ordering: .relaxed)
            case .returned: counters.returnedAfterAccept.add(1, ordering: .relaxed)
            case .unconfirmed:
                counters.unconfirmed.add(1, ordering: .relaxed)
                logger.warning("coin unconfirmed: it is not credit; match it against the cash box", metadata: [
                    "epoch": "\(settlement.coin.epoch)", "devseq": "\(settlement.coin.deviceSeq)", "why": "\(settlement.message)",
                ])
            }
        }
    }

    // MARK: Pending coins

    /// The mech's session is known: every pending coin may be asked about now.
    private func sessionKnown() {
        awaitingSessionSince = nil
        pending.askAllNow(Self.now())
    }

    /// Asks the mech about pending coins whose confirmation is overdue; settles as unconfirmed
    /// those it leaves unanswered too often, or whose session it cannot be asked about.
    private func queryPendingCoins() {
        guard credit == .onConfirmation, mech.isConnected, !pending.isEmpty else { return }
        let now = Self.now()
        if let since = awaitingSessionSince {
            guard now &- since >= Self.sessionWaitNanoseconds else { return }
            logger.warning("the mech did not name its session; asking about pending coins by the boots on record")
            sessionKnown()
        }
        var settlements: [PendingCoins.Settlement] = []
        for coin in pending.due(now: now) {
            guard let boot = epochs.boots[coin.epoch] else {
                settlements += pending.unaskable(knownBoots: epochs.boots).filter { $0.coin == coin }
                continue
            }
            if let gaveUp = pending.queried(coin, now: now) {
                settlements.append(gaveUp)
            } else if mech.query(boot: boot, deviceSeq: coin.deviceSeq) {
                counters.queries.add(1, ordering: .relaxed)
                logger.debug("asked the mech about a pending coin", metadata: ["boot": "\(boot)", "devseq": "\(coin.deviceSeq)"])
            }
        }
        if !settlements.isEmpty { settle(settlements) }
    }

    /// Records `settlements` on their own (outside a batch of readings) and publishes them.
    private func settle(_ settlements: [PendingCoins.Settlement]) {
        let entries = settlements.map { LedgerEntry.resolve(decisionSeq: $0.coin.seq, $0.resolution, message: $0.message) }
        guard let result = commit(entries, publish: false) else { return }
        failpoints.hit(.confirmationCommitted)
        hub.publish(result.events)
        countSettlements(settlements, outcomes: result.outcomes)
        pending.settled(settlements)
    }

    // MARK: Ledger

    /// Appends `batch` (and publishes it unless the caller publishes after answering); on
    /// failure starts the fail-safe (return everything, inhibit the mech) unless another
    /// writer merely held the database past the deadline. Returns nil if nothing was recorded.
    @discardableResult
    private func commit(_ batch: [LedgerEntry], publish: Bool, busyTimeoutMilliseconds: Int = Ledger.defaultBusyTimeoutMilliseconds) -> AppendResult? {
        guard !batch.isEmpty else { return AppendResult(outcomes: [], events: []) }
        do throws(LedgerError) {
            let result = try ledger.append(batch, busyTimeoutMilliseconds: busyTimeoutMilliseconds)
            if let since = ledgerFailingSince { recovered(failedFor: Self.now() - since) }
            if publish { hub.publish(result.events) }
            return result
        } catch {
            carryOver(batch)
            if case .busy = error {
                logger.warning("ledger busy: another process holds it; the batch's coins are returned", metadata: ["error": "\(error)"])
                return nil
            }
            if ledgerFailingSince == nil {
                ledgerFailingSince = Self.now()
                logger.critical("ledger cannot write: returning every coin and inhibiting the mech", metadata: ["error": "\(error)"])
                mech.setInhibit(true)
            } else {
                logger.error("ledger still cannot write", metadata: ["error": "\(error)"])
            }
            return nil
        }
    }

    /// Keeps the events of a failed batch for the next one (decisions are not kept: their coins
    /// were returned; settlements are not kept: the coins stay pending and are asked about again).
    private func carryOver(_ batch: [LedgerEntry]) {
        for entry in batch {
            if case .event = entry, carriedOver.count < 1000 { carriedOver.append(entry) }
        }
    }

    private func runCommands() {
        for command in commands.withLock({ queued in defer { queued.removeAll() }; return queued }) {
            switch command {
            case .inhibit(let on, let by, let completion):
                operatorInhibit = on
                mech.setInhibit(mechInhibited)
                publishState()
                logger.notice(on ? "mech inhibited" : "mech inhibit lifted", metadata: ["by": "\(by)"])
                if let recorded = commit([.event(.inhibit, source: sourceName, detail: ["on": "\(on)", "by": by])], publish: true) {
                    completion(.success(["inhibited": .bool(on), "seq": .int(recorded.events.first?.seq ?? 0)]))
                } else {
                    completion(.failure(CommandError(.unavailable, "the mech is \(on ? "inhibited" : "no longer inhibited"), but the ledger cannot record it")))
                }
            case .install(let new, let completion):
                let old = chain.current
                let detail = ["generation": "\(new.generation)", "previous": "\(old.generation)", "links": new.composition,
                              "fingerprint": new.fingerprint]
                // Recorded first: a reload the ledger cannot record does not happen.
                guard let recorded = commit([.event(.reload, source: nil, detail: detail)], publish: false) else {
                    logger.error("reload not recorded: the ledger cannot write; generation \(old.generation) keeps deciding")
                    completion(.failure(CommandError(.unavailable, "the ledger cannot record the reload: chain generation \(old.generation) keeps deciding")))
                    continue
                }
                failpoints.hit(.reloadSwap)
                chain.swap(new)
                hub.publish(recorded.events)
                logger.notice("chain reloaded", metadata: ["generation": "\(new.generation)", "fingerprint": "\(new.fingerprint)"])
                completion(.success([
                    "generation": .int(Int64(new.generation)), "fingerprint": .string(new.fingerprint),
                    "links": .array(new.links.map { .string("\($0.name)=\($0.origin.plugin)@\($0.origin.version)") }),
                    "seq": .int(recorded.events.first?.seq ?? 0),
                ]))
            case .reloadFailed(let reason, let completion):
                _ = commit([.event(.reloadFailed, source: nil, detail: ["reason": reason, "generation": "\(chain.current.generation)"])], publish: true)
                completion(.failure(CommandError(.failed, "reload failed, chain generation \(chain.current.generation) keeps deciding: \(reason)")))
            case .collect(let by, let completion):
                guard let event = commit([.collect(by: by)], publish: true)?.events.first else {
                    completion(.failure(CommandError(.unavailable, "the ledger cannot write: nothing collected")))
                    continue
                }
                failpoints.hit(.collect)
                let detail = event.detail.flatMap(JSON.parse)
                let rows = detail?["collected"]?.string.flatMap(JSON.parse) ?? .array([])
                let unconfirmed = detail?["unconfirmed"]?.string.flatMap(JSON.parse) ?? .array([])
                logger.notice("cash box collected", metadata: ["by": "\(by)", "seq": "\(event.seq)"])
                completion(.success(["seq": .int(event.seq), "collected": rows, "unconfirmed": unconfirmed]))
            }
        }
    }

    private func publishState() {
        let snapshot = State(connected: mech.isConnected, disconnectedReason: mech.disconnectedReason,
                             inhibited: operatorInhibit, pluginInhibit: pluginInhibit, ledgerFailing: ledgerFailingSince != nil, pending: pending.count)
        state.withLock { $0 = snapshot }
    }

    private func retryLedgerIfFailing() {
        guard let since = ledgerFailingSince else { return }
        let now = Self.now()
        guard now - lastRecoveryAttempt > 5_000_000_000 else { return }
        lastRecoveryAttempt = now
        let seconds = String(format: "%.1f", Double(now - since) / 1e9)
        let entries = carriedOver + [.event(.ledgerRecovered, source: nil, detail: ["failed_for_s": seconds])]
        if let recorded = try? ledger.append(entries) {
            carriedOver = []
            hub.publish(recorded.events)
            ledgerFailingSince = nil
            logger.notice("ledger writes again: accepting coins", metadata: ["failed_for_s": "\(seconds)"])
            mech.setInhibit(mechInhibited)
        }
    }

    private func recovered(failedFor nanoseconds: UInt64) {
        ledgerFailingSince = nil
        logger.notice("ledger writes again: accepting coins", metadata: ["failed_for_s": "\(String(format: "%.1f", Double(nanoseconds) / 1e9))"])
        mech.setInhibit(mechInhibited)
    }

    /// The mech returns every coin while the operator, a failing ledger or a link out of service says so.
    private var mechInhibited: Bool { operatorInhibit || ledgerFailingSince != nil || pluginInhibit != nil }

    /// Records links newly hung or quarantined (or put back), and inhibits the mech while one is.
    private func reviewPluginHealth() {
        let outcome = pluginHealth.review(chain.current)
        if !outcome.entries.isEmpty { commit(outcome.entries, publish: true) }
        guard outcome.inhibit != pluginInhibit else { return }
        pluginInhibit = outcome.inhibit
        mech.setInhibit(mechInhibited)
        if let reason = outcome.inhibit {
            logger.critical("mech inhibited: \(reason)")
        } else {
            logger.notice("every link is in service again: the plugins no longer inhibit the mech")
        }
        publishState()
    }

    static func now() -> UInt64 { cm_monotonic_ns() }
}
