import CLinux
import CoinFacts
import CoinMechChain
import CoinMechConfiguration
import CoinMechCore
import CoinMechDrivers
import CoinMechFailpoints
import CoinMechHotplug
import CoinMechLedger
import CoinMechModel
import CoinMechPlugins
import CoinMechCalibration
import CoinMechProtocol
import CoinMechPublisher
import CoinMechSources
import CoinMechSupport
import CoinMechTeach
import Foundation
import Logging
import Synchronization

/// The deciding thread: it reads the mech, the clock and the operators' commands and hands them
/// to the cores as inputs, through the one executor that carries out what they ask
/// (`CoreExecutor`). The money rules are the cores'; this only waits, reads and hands over.
///
/// Runs on its own thread (`run()` blocks) and owns the mech and the executor. Nothing else
/// waits on it, and it never waits on the Swift concurrency pool.
public final class DecidingLoop: @unchecked Sendable {
    // @unchecked: `mech`, `udev`, `hotplug`, `executor` and `pluginHealth` are touched only by
    // the loop's own thread (`run()` and what it calls). Other threads use `stop()`, `submit()`,
    // `status` (a Mutex) and `heartbeat` (an Atomic).
    private let mech: any Mech
    private var udev: UdevMonitor?
    private var hotplug: HotplugTracker?
    private let executor: CoreExecutor
    private let chain: ChainHolder
    private let logger: Logger
    private let wakePipe = WakePipe()
    private let stopping = Atomic<Bool>(false)
    private let commands = Mutex<[Command]>([])
    /// The loop has run its last commands: `submit` answers at once.
    private let finished = Atomic<Bool>(false)
    /// Which links' problems are recorded; hands the core what changed.
    private var pluginHealth = PluginHealthReview()
    /// Whether `source.currencies` was configured (said once deciding starts, if not).
    private let currenciesConfigured: Bool
    /// Longest sleep in `poll`, so the heartbeat stays fresh for the watchdog.
    public var heartbeatMilliseconds: Int32 = 1000
    /// CLOCK_MONOTONIC ns of the loop's last turn: a stuck loop stops advancing it.
    public let heartbeat = Atomic<UInt64>(cm_monotonic_ns())

    /// What `status` shows, as of the loop's last turn (or inhibit, or reply).
    public var status: Status { executor.status.withLock { $0 } }

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
        /// Pay out from the changer's tubes or the hoppers (`PayoutCore`).
        case payout(PayoutRequest, completion: Completion)
        /// An operator's refill or count of a payout unit (`PayoutCore`).
        case inventory(InventoryRequest, completion: Completion)
        /// The sale application's command on the customer's credit (`CreditCore`).
        case credit(CreditCommand, completion: Completion)

        /// Who hears how it went.
        var completion: Completion {
            switch self {
            case .inhibit(_, _, let completion), .collect(_, let completion), .install(_, let completion), .reloadFailed(_, let completion),
                 .teachStart(_, _, let completion), .teachCommit(_, let completion), .teachAbort(_, let completion), .explain(_, let completion),
                 .payout(_, let completion), .inventory(_, let completion), .credit(_, let completion):
                completion
            }
        }
    }

    /// The loop's state as `status` shows it.
    public struct Status: Sendable {
        public var connected = false
        public var disconnectedReason: String?
        public var core = DecidingCore.Snapshot()
        /// A coin acceptor's or changer's state; nil for other kinds.
        public var acceptor: AcceptorStatus?
        /// A source that gives change: what it pays from, for `status` and `payout_plan`.
        public var payout: PayoutCore.Snapshot?
    }

    /// The composition: the mech from its driver, the cores from the ledger, and the executor
    /// that runs them.
    public init(configuration: DaemonConfiguration, chain: ChainHolder, ledger: Ledger, hub: EventHub, logger: Logger,
                failpoints: Failpoints = .none) throws(LedgerError) {
        self.chain = chain
        self.logger = logger
        let source = configuration.source
        // A link marked hung or quarantined (by the hang watch, a plugin host's supervisor)
        // wakes the loop to inhibit the mech at once.
        chain.alarm.onRaise { [wakePipe] in wakePipe.wake() }
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
        var acceptor: AcceptorCore?
        if let settings = source.mech.acceptor {
            // A coin acceptor goes on from the ledger's counter, knows who it last met, and
            // opens only the positions the operator allows and the chain credits.
            context.acceptor = MechContext.Acceptor(
                persisted: try ledger.acceptorCounter(source: source.name, address: settings.address),
                remembered: try ledger.lastAcceptorIdentification(source: source.name),
                positions: settings.positions, creditableCoinIDs: ChainDecider.creditableCoinIDs(chain.current, logger: logger))
            acceptor = AcceptorCore(source: source.name, address: settings.address, logger: CoreLogger(logger))
        }
        let made = source.mech.make(context)
        mech = made
        var payingMech: (any PayingMech)?
        var payout: PayoutCore?
        if let paying = made as? any PayingMech, paying.givesChange {
            payingMech = paying
            payout = PayoutCore(settings: PayoutCore.Settings(source: source.name, capabilities: paying.payoutCapabilities),
                                open: try ledger.openPayouts(source: source.name), levels: try ledger.inventory(source: source.name),
                                logger: CoreLogger(logger))
        } else if case let open = try ledger.openPayouts(source: source.name), !open.isEmpty {
            // Its changer or hoppers are configured no more: nothing can say what they paid.
            logger.critical("payouts left open by a daemon before this one cannot be settled: this source gives no change any more (its hoppers or changer are not configured); put the configuration back to settle them from the device, or check the cash",
                            metadata: ["open": "\(open.map(\.order.requestID))"])
        }
        var settings = DecidingCore.Settings(source: source.name, credit: source.mech.credit, deadline: source.answerDeadline,
                                             line: made.lineTiming)
        settings.confirmationWindow = source.confirmationWindow
        currenciesConfigured = source.currenciesConfigured
        settings.teachMinimumSamples = CoinCalibration.minimumSamples
        var decisionJournal: DecisionJournal?
        if source.mech.credit == .onConfirmation && source.mech.acceptor == nil {
            decisionJournal = try DecisionJournal(directory: ledger.directory)
            settings.decisionJournal = true
        }
        let restored = DecidingCore.Restored(state: state, boots: try ledger.boots(source: source.name), pending: try ledger.pendingCoins(source: source.name),
                                             unconfirmed: try ledger.unconfirmedCoins(source: source.name))
        var deciding = DecidingCore(settings: settings, restored: restored, logger: CoreLogger(logger), now: .now)
        deciding.currentGeneration = chain.current.generation
        if !restored.pending.isEmpty {
            logger.notice("accepted coins from before the restart wait for the mech's word", metadata: ["pending": "\(restored.pending.count)"])
        }
        // The customer's credit, an account per currency the cabinet takes: those configured,
        // else those the chain's links declare (the coins it can credit at all).
        let currencies = source.currenciesConfigured ? source.coins.currencies : chain.current.acceptPolicy.coins.currencies
        var creditSettings = CreditCore.Settings(source: source.name, currencies: currencies, paysOut: payout != nil)
        creditSettings.standing = source.standingCredit
        let credit = CreditCore(settings: creditSettings)
        let parts = CoreExecutor.Parts(deciding: deciding, acceptor: acceptor, payout: payout, credit: credit, mech: made, payingMech: payingMech,
                                       operatorPositions: context.acceptor?.positions, decisionJournal: decisionJournal,
                                       commitSpeed: source.answerDeadline.map { CommitSpeedWatch(allowance: $0.commitAllowance) })
        executor = CoreExecutor(parts, decider: ChainDecider(chain: chain, sourceName: source.name, logger: logger), ledger: ledger, hub: hub,
                                logger: logger, failpoints: failpoints, stateDirectory: configuration.stateDirectory)
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
            "credit": "\(executor.deciding.settings.credit == .onConfirmation ? "when the mech stores the coin" : "with the answer")",
        ])
        executor.startDeciding()
        // A changer with payouts left open is held from its first COIN TYPE on: its tubes must
        // count only what those payouts paid.
        executor.startPayout()
        executor.startCredit()
        reviewPluginHealth()
        while !stopping.load(ordering: .sequentiallyConsistent) {
            turn(now: .now)
            executor.stepDeciding(.tick)
            executor.stepCredit(.tick)
            runCommands()
            reviewPluginHealth()
            executor.publishStatus()
        }
        // No payout begins from here; a DISPENSE under way is counted and settled before the
        // device is let go, for at most the payout core's stop timeout.
        executor.stepPayout(.stop)
        runCommands()
        commands.withLock { _ in finished.store(true, ordering: .sequentiallyConsistent) }
        runCommands()
        while executor.isPaying { turn(now: .now) }
        // Shutting down: the mech returns coins by itself until the daemon is back.
        let lost = mech.disconnect(reason: "daemon stopping", now: .now)
        // What letting go of the device reported (a changer's POLL lost in flight) is recorded.
        executor.serviceAcceptor()
        if !lost.isEmpty { executor.stepDeciding(.mech(lost)) }
        runCommands()
        executor.stepDeciding(.stop((mech as? any FramedMech)?.frameErrors ?? FrameErrorCounts()))
        logger.info("deciding loop stopped")
    }

    /// One wake-up: the mech polled (or waited for), what its engine reported recorded, the
    /// paying device's word handed over, and its events stepped in.
    private func turn(now: Instant) {
        heartbeat.store(now.nanoseconds, ordering: .relaxed)
        var events = mech.poll(now: now)
        executor.serviceAcceptor()
        executor.servicePayout()
        if events.isEmpty { events = waitForEvents(now: now) }
        executor.serviceAcceptor()
        executor.servicePayout()
        if !events.isEmpty { executor.stepDeciding(.mech(events)) }
    }

    /// Hands the core links newly hung or quarantined, or put back (it records them and
    /// inhibits the mech while one is out of service).
    private func reviewPluginHealth() {
        let current = chain.current
        let outcome = pluginHealth.review(current.outOfService, generation: current.generation)
        guard outcome.inhibit != executor.deciding.snapshot.pluginInhibit || !outcome.record.isEmpty else { return }
        executor.stepDeciding(.pluginHealth(inhibit: outcome.inhibit, record: outcome.record))
    }

    /// The operators' commands, as the cores' inputs.
    private func runCommands() {
        for command in commands.withLock({ queued in defer { queued.removeAll() }; return queued }) {
            switch command {
            case .inhibit(let on, let by, let completion):
                executor.stepDeciding(.inhibit(on: on, by: by, ticket: executor.ticket(completion)))
            case .collect(let by, let completion):
                executor.stepDeciding(.collect(by: by, ticket: executor.ticket(completion)))
            case .install(let new, let completion):
                // A reload that brings a currency in (none configured: the chain's are taken)
                // opens its credit account before any of its coins can be decided.
                if !currenciesConfigured { executor.openCredit(currencies: new.acceptPolicy.coins.currencies) }
                let record = Occurrence.ReloadRecord(generation: new.generation, previous: chain.current.generation, links: new.composition,
                                                     fingerprint: new.fingerprint)
                executor.stepDeciding(.reload(record, ticket: executor.ticket(completion, chain: new)))
            case .reloadFailed(let reason, let completion):
                executor.stepDeciding(.reloadFailed(reason: reason, ticket: executor.ticket(completion)))
            case .teachStart(let request, let by, let completion):
                executor.stepDeciding(.teachStart(request, by: by, ticket: executor.ticket(completion)))
            case .teachCommit(let by, let completion):
                executor.stepDeciding(.teachCommit(by: by, ticket: executor.ticket(completion)))
            case .teachAbort(let by, let completion):
                executor.stepDeciding(.teachAbort(by: by, ticket: executor.ticket(completion)))
            case .explain(let reading, let completion):
                completion(.success(LiveExplanation(reading: reading, chain: chain.current).json))
            case .payout(let request, let completion):
                guard executor.payout != nil else { completion(Self.givesNoChange); continue }
                executor.stepPayout(.payout(request, ticket: executor.ticket(completion)))
            case .inventory(let request, let completion):
                guard executor.payout != nil else { completion(Self.givesNoChange); continue }
                executor.stepPayout(.inventory(request, ticket: executor.ticket(completion)))
            case .credit(let command, let completion):
                executor.stepCredit(.command(command, ticket: executor.ticket(completion)))
            }
        }
    }

    static let givesNoChange: Result<JSON, CommandError> = .failure(CommandError(.unavailable,
        "this mech gives no change: an MDB changer's tubes or ccTalk hoppers (source.hoppers) pay out"))

    private func waitForEvents(now: Instant) -> [MechEvent] {
        var descriptors = [pollfd(fd: wakePipe.readEnd, events: Int16(POLLIN), revents: 0)]
        descriptors.append(pollfd(fd: udev?.descriptor ?? -1, events: Int16(POLLIN), revents: 0))
        if let fd = mech.descriptor { descriptors.append(pollfd(fd: fd, events: Int16(POLLIN), revents: 0)) }
        var timeoutMs: Int32 = heartbeatMilliseconds
        for next in [mech.nextWake, executor.deciding.nextWake] {
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
}
