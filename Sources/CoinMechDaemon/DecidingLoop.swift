import CLinux
import CoinFacts
import CoinMechCCTalk
import CoinMechChain
import CoinMechConfiguration
import CoinMechDrivers
import CoinMechCore
import CoinMechFailpoints
import CoinMechHotplug
import CoinMechLedger
import CoinMechModel
import CoinMechPlugins
import CoinMechCalibration
import CoinMechProtocol
import CoinMechPublisher
import CoinMechSerial
import CoinMechSources
import CoinMechSupport
import CoinMechTeach
import Foundation
import Logging
import Synchronization

/// The deciding core's shell: it reads the mech, the clock and the operators' commands, hands
/// them to `DecidingCore`, and carries out what the core asks — record, answer, ask, inhibit,
/// publish — in that order. The money rules are the core's; the shell only moves things.
///
/// Runs on its own thread (`run()` blocks) and owns the mech and the core. Nothing else waits on
/// it, and it never waits on the Swift concurrency pool.
public final class DecidingLoop: @unchecked Sendable {
    // @unchecked: `mech`, `udev`, `hotplug`, `core` and `tickets` are touched only by the loop's
    // own thread (`run()` and what it calls). Other threads use `stop()`, `submit()`, `status`
    // (a Mutex) and `heartbeat` (an Atomic).
    private let mech: any Mech
    private var udev: UdevMonitor?
    private var hotplug: HotplugTracker?
    private var core: DecidingCore
    let chain: ChainHolder
    let ledger: Ledger
    let hub: EventHub
    let logger: Logger
    let failpoints: Failpoints
    /// The source's name, for the readings plugins see (read while the core is mid-step).
    let sourceName: String
    /// Where teach mode's calibration files may be written, and how.
    private let stateDirectory: String
    private let calibrations: CalibrationFiles
    private let wakePipe = WakePipe()
    private let stopping = Atomic<Bool>(false)
    private let commands = Mutex<[Command]>([])
    /// The loop has run its last commands: `submit` answers at once.
    private let finished = Atomic<Bool>(false)
    /// Commands waiting for the core's reply, with the chain a reload would swap in.
    private var tickets: [Ticket: (completion: Completion, chain: Chain?)] = [:]
    /// Which links' problems are recorded; hands the core what changed.
    private var pluginHealth = PluginHealthReview()
    /// Whether `source.currencies` was configured (said once deciding starts, if not).
    private let currenciesConfigured: Bool
    /// Commits slower than the answer plan allows (a source with a deadline only).
    private var commitSpeed: CommitSpeedWatch?
    /// Where fresh decisions are made durable before they are answered (a mech that confirms
    /// its coins); nil: every batch is committed to the ledger before it is answered.
    private let decisionJournal: DecisionJournal?
    /// Pages the ledger could still take at its last commit (nil: it has no size limit). Near
    /// its limit a batch is committed before it is answered: an accept answered from the
    /// journal must not meet a ledger that cannot take it.
    private var ledgerPagesLeft: Int?
    private var nextTicket: UInt64 = 0
    /// A source that takes coins itself (ccTalk, MDB): its engine's shell and the money rules
    /// of its batches.
    let acceptorMech: (any AcceptorMech)?
    var acceptor: AcceptorCore?
    /// The coin positions the operator allows (`source.positions`), for such a source.
    let operatorPositions: CoinPositionMask?
    /// The payout under way, and payouts a daemon before this one began and did not settle:
    /// they are settled from the changer's tubes before any coin moves.
    var payout: PayoutJob?
    var unsettledPayouts: [PayoutRecord] = []
    /// The tube count after which the unsettled payouts may be settled (one taken once the
    /// changer held still).
    var unsettledCountAfter: UInt64?
    var isStopping: Bool { stopping.load(ordering: .relaxed) }
    /// Longest sleep in `poll`, so the heartbeat stays fresh for the watchdog.
    public var heartbeatMilliseconds: Int32 = 1000
    /// CLOCK_MONOTONIC ns of the loop's last turn: a stuck loop stops advancing it.
    public let heartbeat = Atomic<UInt64>(cm_monotonic_ns())
    /// What `status` shows, refreshed after each turn.
    public let status = Mutex(Status())

    public typealias Completion = @Sendable (Result<JSON, CommandError>) -> Void

    /// A request from another thread, run by the loop between batches so that every ledger
    /// write comes from this thread and events are published in `seq` order.
    public enum Command: Sendable {
        case inhibit(Bool, by: String, completion: Completion)
        case collect(by: String, completion: Completion)
        /// Record a reload built by the reloader, then swap its chain in.
        case install(Chain, completion: Completion)
        /// Record that a reload failed (the current chain stays).
        case reloadFailed(reason: String, completion: Completion)
        /// Teach mode: start teaching `request`, commit what was taught, or end it.
        case teachStart(TeachRequest, by: String, completion: Completion)
        case teachCommit(by: String, completion: Completion)
        case teachAbort(by: String, completion: Completion)
        /// Ask the running chain's links to explain a reading (`LiveExplanation`): here, between
        /// two readings, because a plugin's `explain` never runs while it validates.
        case explain(Reading, completion: Completion)
        /// Pay out from the changer's tubes (`DecidingLoop+Payout`).
        case payout(amountMinor: Int64, currency: String?, requestID: String, by: String, completion: Completion)
        /// An operator's refill or count of a payout unit (`DecidingLoop+Payout`).
        case inventory(unit: String, InventoryChange.Kind, completion: Completion)

        /// Who hears how it went.
        var completion: Completion {
            switch self {
            case .inhibit(_, _, let completion), .collect(_, let completion), .install(_, let completion), .reloadFailed(_, let completion),
                 .teachStart(_, _, let completion), .teachCommit(_, let completion), .teachAbort(_, let completion), .explain(_, let completion),
                 .payout(_, _, _, _, let completion), .inventory(_, _, let completion):
                completion
            }
        }
    }

    /// The loop's state as `status` shows it.
    public struct Status: Sendable {
        public var connected = false
        public var disconnectedReason: String?
        public var core = DecidingCore.Snapshot()
        /// A ccTalk source's state; nil for other kinds.
        public var acceptor: AcceptorStatus?
    }

    public init(configuration: DaemonConfiguration, chain: ChainHolder, ledger: Ledger, hub: EventHub, logger: Logger,
                failpoints: Failpoints = .none) throws(LedgerError) {
        self.hub = hub
        self.chain = chain
        self.ledger = ledger
        self.logger = logger
        self.failpoints = failpoints
        let source = configuration.source
        sourceName = source.name
        // A link marked hung or quarantined (by the hang watch, a plugin host's supervisor)
        // wakes the loop to inhibit the mech at once.
        chain.alarm.onRaise { [wakePipe] in wakePipe.wake() }
        stateDirectory = configuration.stateDirectory
        calibrations = CalibrationFiles(source: source.name)
        // Decisions answered before a crash kept them off the ledger go on it before anything
        // reads it: the source's counters and its pending coins include them.
        let replay = try DecisionJournal.replay(directory: ledger.directory, into: ledger)
        if replay.recorded > 0 || replay.tornBytes > 0 {
            logger.notice("the decision journal is replayed: decisions answered before the last stop are on the ledger", metadata: [
                "recorded": "\(replay.recorded)", "on_the_ledger_already": "\(replay.alreadyRecorded)",
                "torn_bytes_never_answered": "\(replay.tornBytes)",
            ])
        }
        let state = try ledger.sourceState(source.name)
        var context = MechContext(lastDeviceSeq: state.lastDeviceSeq, failpoints: failpoints)
        if let settings = source.mech.acceptor {
            // A coin acceptor goes on from the ledger's counter, knows who it last met, and
            // opens only the positions the operator allows and the chain credits.
            context.acceptor = MechContext.Acceptor(
                persisted: try ledger.acceptorCounter(source: source.name, address: settings.address),
                remembered: try ledger.lastAcceptorIdentification(source: source.name),
                positions: settings.positions, creditableCoinIDs: Self.creditableCoinIDs(chain.current, logger: logger),
                inventory: try ledger.inventory(source: source.name))
            acceptor = AcceptorCore(source: source.name, address: settings.address)
        }
        operatorPositions = context.acceptor?.positions
        let made = source.mech.make(context)
        mech = made
        acceptorMech = made as? any AcceptorMech
        if let paying = made as? any PayingMech, paying.givesChange {
            unsettledPayouts = try ledger.openPayouts(source: source.name)
            // Held from the first COIN TYPE on: its tubes must count only what the payout paid.
            if !unsettledPayouts.isEmpty { paying.holdForPayout(true) }
        } else if case let open = try ledger.openPayouts(source: source.name), !open.isEmpty {
            // Its changer or hoppers are configured no more: nothing can say what they paid.
            logger.critical("payouts left open by a daemon before this one cannot be settled: this source gives no change any more (its hoppers or changer are not configured); put the configuration back to settle them from the device, or check the cash",
                            metadata: ["open": "\(open.map(\.order.requestID))"])
        }
        var settings = DecidingCore.Settings(source: source.name, credit: source.mech.credit, deadline: source.answerDeadline,
                                             line: made.lineTiming)
        settings.confirmationWindow = source.confirmationWindow
        currenciesConfigured = source.currenciesConfigured
        commitSpeed = source.answerDeadline.map { CommitSpeedWatch(allowance: $0.commitAllowance) }
        settings.teachMinimumSamples = CoinCalibration.minimumSamples
        if source.mech.credit == .onConfirmation && source.mech.acceptor == nil {
            decisionJournal = try DecisionJournal(directory: ledger.directory)
            settings.decisionJournal = true
        } else {
            decisionJournal = nil
        }
        let restored = DecidingCore.Restored(state: state, boots: try ledger.boots(source: source.name), pending: try ledger.pendingCoins(source: source.name),
                                             unconfirmed: try ledger.unconfirmedCoins(source: source.name))
        core = DecidingCore(settings: settings, restored: restored, logger: CoreLogger(logger), now: .now)
        core.currentGeneration = chain.current.generation
        if !restored.pending.isEmpty {
            logger.notice("accepted coins from before the restart wait for the mech's word", metadata: ["pending": "\(restored.pending.count)"])
        }
        if let match = source.hotplug {
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
    }

    /// Asks `run()` to finish the reading in hand, commit, and return.
    public func stop() {
        stopping.store(true, ordering: .sequentiallyConsistent)
        wakePipe.wake()
    }

    /// Queues `command` for the loop; its completion runs on the loop's thread. Once the loop
    /// has finished, nothing would run it: it is answered `unavailable` at once.
    public func submit(_ command: Command) {
        let queued = commands.withLock { queue in
            guard !finished.load(ordering: .sequentiallyConsistent) else { return false }
            queue.append(command)
            return true
        }
        guard queued else { return command.completion(.failure(CommandError(.unavailable, "the daemon is stopping: nothing was done; ask again once it is back"))) }
        wakePipe.wake()
    }

    /// Runs until `stop()`.
    public func run() {
        if !currenciesConfigured {
            logger.warning("source.currencies is not set: the cabinet takes only the currencies its chain's links declare (\(chain.current.acceptPolicy.coins.currencies.joined(separator: ", "))); set it to this cabinet's currency")
        }
        logger.info("deciding", metadata: [
            "device": "\(mech.location)", "chain_generation": "\(chain.current.generation)",
            "credit": "\(core.settings.credit == .onConfirmation ? "when the mech stores the coin" : "with the answer")",
        ])
        carryOut(core.start(now: .now))
        reviewPluginHealth()
        while !stopping.load(ordering: .sequentiallyConsistent) {
            let now = Instant.now
            heartbeat.store(now.nanoseconds, ordering: .relaxed)
            var events = mech.poll(now: now)
            serviceAcceptor()
            servicePayout()
            if events.isEmpty { events = waitForEvents(now: now) }
            serviceAcceptor()
            servicePayout()
            if !events.isEmpty { step(.mech(events)) }
            step(.tick)
            runCommands()
            reviewPluginHealth()
            publishStatus()
        }
        // A DISPENSE under way is counted and settled before the changer is let go.
        runCommands()
        commands.withLock { _ in finished.store(true, ordering: .sequentiallyConsistent) }
        runCommands()
        finishPayoutBeforeStop {
            let now = Instant.now
            heartbeat.store(now.nanoseconds, ordering: .relaxed)
            var events = mech.poll(now: now)
            serviceAcceptor()
            if events.isEmpty { events = waitForEvents(now: now) }
            serviceAcceptor()
            if !events.isEmpty { step(.mech(events)) }
        }
        // Shutting down: the mech returns coins by itself until the daemon is back.
        let lost = mech.disconnect(reason: "daemon stopping", now: .now)
        // What letting go of the device reported (a changer's POLL lost in flight) is recorded.
        serviceAcceptor()
        if !lost.isEmpty { step(.mech(lost)) }
        runCommands()
        step(.stop((mech as? any FramedMech)?.frameErrors ?? FrameErrorCounts()))
        logger.info("deciding loop stopped")
    }

    /// Hands the core links newly hung or quarantined, or put back (it records them and
    /// inhibits the mech while one is out of service).
    private func reviewPluginHealth() {
        let current = chain.current
        let outcome = pluginHealth.review(current.outOfService, generation: current.generation)
        guard outcome.inhibit != core.snapshot.pluginInhibit || !outcome.record.isEmpty else { return }
        step(.pluginHealth(inhibit: outcome.inhibit, record: outcome.record))
    }

    func step(_ input: CoreInput) {
        carryOut(core.step(input, at: .now, decide: decide))
    }

    /// Asks the current chain about a candidate.
    private func decide(_ candidate: Candidate) -> Decided {
        let current = chain.current
        let reading = candidate.reading
        let decision = current.decide(Reading(
            deviceSeq: reading.deviceSeq, timestampNanoseconds: reading.sentAt.nanoseconds, diameterMM: reading.measurement.diameterMM,
            weightG: reading.measurement.weightG, thicknessMM: reading.measurement.thicknessMM, channel: reading.measurement.channel,
            alloy: reading.measurement.alloy.map { Reading.Alloy(lowIACS: $0.lowIACS, highIACS: $0.highIACS, permeability: $0.permeability) },
            source: sourceName))
        let verdict: DecisionRecord.Verdict
        switch decision.verdict {
        case .accept(let denomination): verdict = .accept(currency: denomination.currency, code: denomination.code, valueMinor: denomination.valueMinor)
        case .reject(let rejection):
            verdict = .reject(reason: rejection.reason, message: rejection.message)
            // At most `Chain.maximumLies` a link before it is quarantined: no flood.
            if rejection.reason == "plugin_lie" {
                logger.warning("a plugin lied: it accepted a coin this cabinet does not take; the coin is returned", metadata: [
                    "link": "\(decision.linkName)", "devseq": "\(reading.deviceSeq)", "why": "\(rejection.message)",
                ])
            }
        }
        return Decided(verdict: verdict, link: decision.linkName, chainGeneration: decision.chainGeneration, decidedAt: .now)
    }

    /// Carries out the core's outputs in order; a commit's outcome goes straight back in.
    private func carryOut(_ outputs: [CoreOutput]) {
        for output in outputs {
            switch output {
            case .commit(let entries, let busyTimeout):
                let milliseconds = Int(busyTimeout.nanoseconds / 1_000_000)
                do throws(LedgerError) {
                    let started = Instant.now
                    let result = try ledger.append(entries, busyTimeoutMilliseconds: milliseconds)
                    noteCommit(took: .now - started)
                    if decisionJournal != nil, !result.events.isEmpty { ledgerPagesLeft = ledger.pagesLeft() }
                    step(.committed(result))
                } catch {
                    step(.commitFailed(error))
                }
            case .commitJournalled(let entries):
                do throws(LedgerError) {
                    // At the time the journal wrote with them: a replay records the same events.
                    let result = try ledger.append(entries, synced: false, time: decisionJournal?.lastAppendTime)
                    ledgerPagesLeft = ledger.pagesLeft()
                    step(.committed(result))
                } catch {
                    // The journal keeps these decisions until the commit that ends the failure.
                    step(.commitFailed(error))
                }
            case .journal(let records):
                do throws(LedgerError) {
                    guard let decisionJournal else { throw .write(message: "this source keeps no decision journal") }
                    // A page a decision, and room to spare: far more than one takes.
                    if let left = ledgerPagesLeft ?? ledger.pagesLeft(), left < Self.journalHeadroomPages + records.count {
                        step(.journalDeclined)
                        continue
                    }
                    try decisionJournal.append(records)
                    step(.journalled)
                } catch {
                    step(.journalFailed("\(error)"))
                }
            case .trimJournal:
                decisionJournal?.trim()
            case .answer(let seq, let accept):
                if !mech.answer(deviceSeq: seq, accept: accept) {
                    logger.warning("could not answer the mech", metadata: ["devseq": "\(seq)", "accept": "\(accept)"])
                }
            case .query(let boot, let seq):
                if (mech as? any ConfirmingMech)?.query(boot: boot, deviceSeq: seq) == true {
                    logger.debug("asked the mech about a pending coin", metadata: ["boot": "\(boot)", "devseq": "\(seq)"])
                }
            case .askSession:
                (mech as? any ConfirmingMech)?.askSession()
            case .setInhibit(let on):
                mech.setInhibit(on)
                serviceAcceptor()
                publishStatus()
            case .publish(let events):
                hub.publish(events)
            case .swapChain(let ticket):
                if let new = tickets[ticket]?.chain {
                    chain.swap(new)
                    allowAcceptorPositions()
                }
            case .reply(let ticket, let outcome):
                publishStatus()
                tickets.removeValue(forKey: ticket)?.completion(Self.reply(outcome))
            case .failpoint(let point):
                failpoints.hit(point)
            case .stageCalibration(let session):
                step(.calibrationStaged(stage(session)))
            case .installCalibration(let staged):
                step(.calibrationInstalled(calibrations.install(staged)))
            case .discardCalibration(let staged):
                calibrations.discard(staged)
            }
        }
    }

    /// Pages a ledger with a size limit keeps free beyond a page per decision before a batch
    /// may be answered from the decision journal.
    static let journalHeadroomPages = 16

    /// Every commit is synced (docs/LEDGER.md): on storage slower than the commit allowance,
    /// accepts reach the mech late and it returns the coins. The operator hears of it.
    private func noteCommit(took: Duration) {
        guard let warning = commitSpeed?.committed(took: took, at: .now) else { return }
        logger.warning("the ledger's storage is too slow for the mech's deadline: accepts reach the mech late and it returns those coins; give the state directory faster storage, or raise source.commit_allowance_ms if the deadline leaves room", metadata: [
            "state_dir": "\(stateDirectory)", "slowest_commit_ms": "\(Self.milliseconds(warning.slowest))",
            "commit_allowance_ms": "\(Self.milliseconds(warning.allowance))", "slow_commits": "\(warning.slowCommits)",
        ])
    }

    private static func milliseconds(_ duration: Duration) -> String {
        let (seconds, attoseconds) = duration.components
        return String(format: "%.1f", Double(seconds) * 1e3 + Double(attoseconds) / 1e15)
    }

    private func runCommands() {
        for command in commands.withLock({ queued in defer { queued.removeAll() }; return queued }) {
            nextTicket += 1
            let ticket = Ticket(nextTicket)
            switch command {
            case .inhibit(let on, let by, let completion):
                tickets[ticket] = (completion, nil)
                step(.inhibit(on: on, by: by, ticket: ticket))
            case .collect(let by, let completion):
                tickets[ticket] = (completion, nil)
                step(.collect(by: by, ticket: ticket))
            case .install(let new, let completion):
                tickets[ticket] = (completion, new)
                let record = Occurrence.ReloadRecord(generation: new.generation, previous: chain.current.generation, links: new.composition,
                                                     fingerprint: new.fingerprint)
                step(.reload(record, ticket: ticket))
            case .reloadFailed(let reason, let completion):
                tickets[ticket] = (completion, nil)
                step(.reloadFailed(reason: reason, ticket: ticket))
            case .teachStart(let request, let by, let completion):
                tickets[ticket] = (completion, nil)
                step(.teachStart(request, by: by, ticket: ticket))
            case .teachCommit(let by, let completion):
                tickets[ticket] = (completion, nil)
                step(.teachCommit(by: by, ticket: ticket))
            case .teachAbort(let by, let completion):
                tickets[ticket] = (completion, nil)
                step(.teachAbort(by: by, ticket: ticket))
            case .explain(let reading, let completion):
                completion(.success(LiveExplanation(reading: reading, chain: chain.current).json))
            case .payout(let amount, let currency, let requestID, let by, let completion):
                beginPayout(amountMinor: amount, currency: currency, requestID: requestID, by: by, completion: completion)
            case .inventory(let unit, let kind, let completion):
                changeInventory(unit: unit, kind, completion: completion)
            }
        }
    }

    /// Writes a teach session's calibration beside its file, on the link it was started for:
    /// a chain reloaded meanwhile must still read that file.
    private func stage(_ session: TeachSession) -> Result<StagedCalibration, TeachFailure> {
        let request = session.request
        switch TeachTarget.resolve(currency: request.currency, code: request.code, chain: chain.current, source: sourceName, stateDirectory: stateDirectory) {
        case .failure(let failure):
            return .failure(TeachFailure("the chain changed while teaching: \(failure.message)"))
        case .success(let target) where target.link != request.link || target.file != request.file:
            return .failure(TeachFailure("the chain changed while teaching: \(request.currency) is now taught through link '\(target.link)' "
                + "reading \(target.file), not '\(request.link)' reading \(request.file); abort and teach again"))
        case .success(let target):
            return calibrations.stage(TeachReport(session: session, table: target.table, minimumSamples: core.settings.teachMinimumSamples))
        }
    }

    /// The socket API's answer for a command's outcome.
    static func reply(_ outcome: CommandOutcome) -> Result<JSON, CommandError> {
        switch outcome {
        case .inhibited(let on, let seq):
            return .success(["inhibited": .bool(on), "seq": .int(seq)])
        case .collected(let seq, let credited, let unconfirmed):
            return .success(["seq": .int(seq), "collected": .array(credited.map(\.json)), "unconfirmed": .array(unconfirmed.map(\.json))])
        case .reloaded(let record, let seq):
            return .success([
                "generation": .int(Int64(record.generation)), "fingerprint": .string(record.fingerprint),
                "links": .array(record.links.split(separator: ",").map { .string(String($0.prefix { $0 != "#" })) }),
                "seq": .int(seq),
            ])
        case .unrecorded(let message):
            return .failure(CommandError(.unavailable, message))
        case .reloadFailed(let reason, let generation):
            return .failure(CommandError(.failed, "reload failed, chain generation \(generation) keeps deciding: \(reason)"))
        case .teaching(let session, let seq):
            let request = session.request
            return .success(["seq": .int(seq), "currency": .string(request.currency), "code": .string(request.code), "coins": .int(Int64(request.coins)),
                             "link": .string(request.link), "file": .string(request.file)])
        case .taught(let record, let seq):
            var result: [String: JSON] = [
                "seq": .int(seq), "currency": .string(record.currency), "code": .string(record.code), "samples": .int(Int64(record.samples)),
                "left_out": .int(Int64(record.leftOut)), "file": .string(record.file), "sha256": .string(record.sha256),
            ]
            for (axis, summary) in record.axes { result[axis] = .string(summary) }
            return .success(.object(result))
        case .teachAborted(let session, let seq):
            return .success(["seq": .int(seq), "currency": .string(session.request.currency), "code": .string(session.request.code),
                             "samples": .int(Int64(session.samples.count))])
        case .teachRefused(let message), .teachFailed(let message):
            return .failure(CommandError(.failed, message))
        }
    }

    func waitForEvents(now: Instant) -> [MechEvent] {
        var descriptors = [pollfd(fd: wakePipe.readEnd, events: Int16(POLLIN), revents: 0)]
        descriptors.append(pollfd(fd: udev?.descriptor ?? -1, events: Int16(POLLIN), revents: 0))
        if let fd = mech.descriptor { descriptors.append(pollfd(fd: fd, events: Int16(POLLIN), revents: 0)) }
        var timeoutMs: Int32 = heartbeatMilliseconds
        for next in [mech.nextWake, core.nextWake] {
            if let next { timeoutMs = min(timeoutMs, Int32(clamping: next > now ? (next - now).nanoseconds / 1_000_000 + 1 : 0)) }
        }
        let ready = poll(&descriptors, nfds_t(descriptors.count), timeoutMs)
        guard ready > 0 else { return [] }
        if descriptors[0].revents != 0 { wakePipe.drain() }
        var events: [MechEvent] = []
        if descriptors[1].revents != 0, let udev {
            while let event = udev.receive() {
                if let change = hotplug?.handle(event) {
                    logger.notice("udev: mech device \(change)")
                    events += mech.hotplug(change, now: .now)
                }
            }
        }
        if descriptors.count > 2 && descriptors[2].revents != 0 {
            let hungUp = descriptors[2].revents & Int16(POLLHUP | POLLERR | POLLNVAL) != 0
            events += mech.readEvents(now: .now, hungUp: hungUp)
        }
        return events
    }

    private func publishStatus() {
        var snapshot = Status(connected: mech.isConnected, disconnectedReason: mech.disconnectedReason, core: core.snapshot)
        if let acceptor {
            if let cctalk = acceptorMech as? CCTalkMech {
                snapshot.acceptor = AcceptorStatus(engine: cctalk.engine, core: acceptor, mech: cctalk)
            } else if let changer = acceptorMech as? MDBMech {
                snapshot.acceptor = AcceptorStatus(changer: changer, core: acceptor)
            }
        }
        status.withLock { $0 = snapshot }
    }
}
