import CLinux
import CoinMechChain
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
/// commits the decisions, and only then tells the mech to accept.
///
/// Runs on its own thread (`run()` blocks) and owns the mech, the sequence tracker and the
/// answers. Everything that arrives in one read is decided, committed in one transaction
/// (group commit), then answered. If the ledger cannot write, every coin is returned and the
/// mech is inhibited until a write succeeds again.
public final class DecidingLoop: @unchecked Sendable {
    private let mech: any Mech
    /// udev, when it can be watched: removals and arrivals of the mech's device.
    private var udev: UdevMonitor?
    private var hotplug: HotplugTracker?
    private let sourceName: String
    private let answerDeadline: AnswerDeadline?
    private let chain: ChainHolder
    private let ledger: Ledger
    private let logger: Logger
    private var tracker: DeviceSequenceTracker
    /// Answers given in the current epoch, by device seq, for duplicate sentences.
    private var answers: [UInt64: Bool] = [:]
    private var operatorInhibit = false
    private var ledgerFailingSince: UInt64?
    private var lastRecoveryAttempt: UInt64 = 0
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

    /// A request from another thread, run by the loop between batches so that every ledger
    /// write comes from this thread and events are published in `seq` order.
    public enum Command: Sendable {
        case inhibit(Bool, by: String, completion: @Sendable (Result<JSON, CommandError>) -> Void)
        case collect(by: String, completion: @Sendable (Result<JSON, CommandError>) -> Void)
        /// Swap in a chain built by the reloader, and record it.
        case install(Chain, completion: @Sendable (Result<JSON, CommandError>) -> Void)
        /// Record that a reload failed (the current chain stays).
        case reloadFailed(reason: String, completion: @Sendable (Result<JSON, CommandError>) -> Void)
    }

    /// The loop's state as `status` shows it.
    public struct State: Sendable {
        public var connected = false
        public var disconnectedReason: String?
        public var inhibited = false
        public var ledgerFailing = false
    }

    /// What the deciding loop has done, readable from any thread.
    public final class Counters: Sendable {
        public let readings = Atomic<UInt64>(0)
        public let accepted = Atomic<UInt64>(0)
        public let rejected = Atomic<UInt64>(0)
        public let duplicates = Atomic<UInt64>(0)
        public let protocolErrors = Atomic<UInt64>(0)
        /// Accepts recorded as `deadline_passed` rejections: decided too late to credit.
        public let deadlineWithdrawn = Atomic<UInt64>(0)
        /// Accepts answered after the mech's deadline although committed (`late_answer` events).
        public let lateAnswers = Atomic<UInt64>(0)
        /// CLOCK_MONOTONIC ns of the loop's last turn: a stuck loop stops advancing it.
        public let heartbeat = Atomic<UInt64>(0)
        init() {}
    }

    public init(configuration: DaemonConfiguration, chain: ChainHolder, ledger: Ledger, hub: EventHub, logger: Logger) throws(LedgerError) {
        self.hub = hub
        sourceName = configuration.source.name
        answerDeadline = configuration.source.answerDeadline
        self.chain = chain
        self.ledger = ledger
        self.logger = logger
        let state = try ledger.sourceState(sourceName)
        mech = Self.mech(for: configuration.source, lastDeviceSeq: state.lastDeviceSeq)
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
    }

    /// The mech the configuration describes.
    static func mech(for source: DaemonConfiguration.Source, lastDeviceSeq: UInt64?) -> any Mech {
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
            let serial = SerialMech(path: source.device, baud: source.baud)
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
        logger.info("deciding", metadata: ["device": "\(mech.location)", "chain_generation": "\(chain.current.generation)"])
        while !stopping.load(ordering: .sequentiallyConsistent) {
            let now = Self.now()
            counters.heartbeat.store(now, ordering: .relaxed)
            var events = mech.poll(now: now)
            if events.isEmpty {
                events = waitForEvents(now: now)
            }
            handle(events)
            runCommands()
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
            "overlong": "\(errors.overlong)", "malformed": "\(errors.malformed)",
        ])])
        logger.info("deciding loop stopped")
    }

    private func waitForEvents(now: UInt64) -> [MechEvent] {
        var descriptors = [pollfd(fd: wakePipe.readEnd, events: Int16(POLLIN), revents: 0)]
        descriptors.append(pollfd(fd: udev?.descriptor ?? -1, events: Int16(POLLIN), revents: 0))
        if let fd = mech.descriptor { descriptors.append(pollfd(fd: fd, events: Int16(POLLIN), revents: 0)) }
        var timeoutMs: Int32 = heartbeatMilliseconds
        if let next = mech.nextWake { timeoutMs = min(timeoutMs, Int32(clamping: next > now ? (next - now) / 1_000_000 + 1 : 0)) }
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

    /// Decides every reading among `events`, records everything in one transaction, then answers.
    func handle(_ events: [MechEvent]) {
        guard !events.isEmpty else { return }
        var batch: [LedgerEntry] = []
        var replies: [Reply] = []
        let current = chain.current
        for event in events {
            switch event {
            case .connected(let path):
                logger.notice("mech connected", metadata: ["device": "\(path)"])
                batch.append(.event(.sourceConnected, source: sourceName, detail: ["device": path]))
                mech.setInhibit(operatorInhibit || ledgerFailingSince != nil)
            case .lost(let path, let reason):
                logger.warning("mech lost", metadata: ["device": "\(path)", "reason": "\(reason)"])
                batch.append(.event(.sourceLost, source: sourceName, detail: ["device": path, "reason": reason]))
            case .status(.powerUp, _):
                tracker.powerUp()
                answers.removeAll()
                logger.notice("mech powered up", metadata: ["epoch": "\(tracker.epoch)"])
                batch.append(.event(.mechPowerUp, source: sourceName, detail: ["epoch": "\(tracker.epoch)"]))
            case .status(let status, let detail):
                logger.warning("mech status", metadata: ["status": "\(status.rawValue)", "detail": "\(detail ?? "")"])
                batch.append(.event(.mechStatus, source: sourceName, detail: ["status": status.rawValue.lowercased(), "detail": detail ?? ""]))
            case .protocolError(let error):
                counters.protocolErrors.add(1, ordering: .relaxed)
                logger.warning("bad data from mech", metadata: ["error": "\(error)"])
            case .reading(let seq, let measurement, let receivedAt, let rejection):
                let epoch: Int64
                switch tracker.classify(seq, measurement) {
                case .duplicate:
                    counters.duplicates.add(1, ordering: .relaxed)
                    let answer = answers[seq] ?? false
                    logger.info("duplicate sentence answered again", metadata: ["devseq": "\(seq)", "accept": "\(answer)"])
                    replies.append(Reply(seq: seq, accept: answer))
                    continue
                case .impliedPowerUp(let newEpoch):
                    answers.removeAll()
                    logger.warning("device numbers went back without a power-up: new epoch", metadata: ["epoch": "\(newEpoch)"])
                    batch.append(.event(.mechPowerUp, source: sourceName, detail: ["epoch": "\(newEpoch)", "implied": "true"]))
                    epoch = newEpoch
                case .new(let current):
                    epoch = current
                }
                let reading = Reading(
                    deviceSeq: seq, timestampNanoseconds: receivedAt, diameterMM: measurement.diameterMM, weightG: measurement.weightG,
                    thicknessMM: measurement.thicknessMM, channel: measurement.channel, source: sourceName)
                let decision: Decision
                if let rejection {
                    decision = Decision(rejectedBy: "source", chainGeneration: current.generation, reason: rejection,
                                        message: "the source could not measure this coin reliably")
                } else if operatorInhibit {
                    decision = Decision(rejectedBy: "inhibit", chainGeneration: current.generation, reason: "inhibited", message: "the mech is inhibited")
                } else {
                    decision = current.decide(reading)
                }
                counters.readings.add(1, ordering: .relaxed)
                replies.append(Reply(seq: seq, accept: decision.isAccept, receivedAt: receivedAt, epoch: epoch, batchIndex: batch.count))
                batch.append(.decision(source: sourceName, epoch: epoch, reading: reading, decision: decision))
                answers[seq] = decision.isAccept
                logger.debug("decision", metadata: [
                    "devseq": "\(seq)", "epoch": "\(epoch)", "reading": "\(reading)", "verdict": "\(decision.verdict)",
                    "link": "\(decision.linkName)", "generation": "\(decision.chainGeneration)",
                ])
            }
        }
        withdrawAcceptsPastDeadline(&batch, &replies)
        let committed = commit(batch) != nil
        var late: [LedgerEntry] = []
        for reply in replies {
            // The invariant: no accept reaches the mech unless its decision is on disk.
            let accept = reply.accept && committed
            if !mech.answer(deviceSeq: reply.seq, accept: accept) {
                logger.warning("could not answer the mech", metadata: ["devseq": "\(reply.seq)"])
            }
            if accept {
                counters.accepted.add(1, ordering: .relaxed)
                if let deadline = answerDeadline, let receivedAt = reply.receivedAt,
                   let lateBy = deadline.lateBy(receivedAt: receivedAt, answeredAt: Self.now(), transit: reply.transit) {
                    let ms = String(format: "%.1f", Double(lateBy) / 1e6)
                    logger.error("accept reached the mech after its deadline: the mech returned a coin the ledger credits",
                                 metadata: ["devseq": "\(reply.seq)", "epoch": "\(reply.epoch)", "late_by_ms": "\(ms)"])
                    late.append(.event(.lateAnswer, source: sourceName, detail: ["epoch": "\(reply.epoch)", "devseq": "\(reply.seq)", "late_by_ms": ms]))
                }
            } else {
                counters.rejected.add(1, ordering: .relaxed)
            }
        }
        if !committed {
            for reply in replies where reply.accept { answers[reply.seq] = false }
        }
        if !late.isEmpty {
            counters.lateAnswers.add(UInt64(late.count), ordering: .relaxed)
            commit(late)
        }
    }

    /// One answer owed to the mech; readings decided in this batch know when they arrived.
    private struct Reply {
        var seq: UInt64
        var accept: Bool
        var receivedAt: UInt64?
        var epoch: Int64 = 0
        var batchIndex: Int?
        /// The answer's time on the line, once an accept has been checked against the deadline.
        var transit: UInt64 = 0
    }

    /// Turns every accept the mech will have given up on before the commit can finish into a
    /// `deadline_passed` rejection, so the ledger never credits a coin the mech returns.
    private func withdrawAcceptsPastDeadline(_ batch: inout [LedgerEntry], _ replies: inout [Reply]) {
        guard let deadline = answerDeadline else { return }
        let now = Self.now()
        for index in replies.indices where replies[index].accept {
            replies[index].transit = mech.answerTransitNanoseconds(deviceSeq: replies[index].seq)
            guard let receivedAt = replies[index].receivedAt, let batchIndex = replies[index].batchIndex,
                  !deadline.canCredit(receivedAt: receivedAt, now: now, transit: replies[index].transit),
                  case .decision(let source, let epoch, let reading, let decided) = batch[batchIndex] else { continue }
            let ms = Double(deadline.deadlineNanoseconds) / 1e6
            let waited = String(format: "%.1f", Double(now &- receivedAt) / 1e6)
            batch[batchIndex] = .decision(source: source, epoch: epoch, reading: reading, decision: Decision(
                rejectedBy: "deadline", chainGeneration: decided.chainGeneration, reason: "deadline_passed",
                message: "decided \(waited) ms after the reading, too late for the mech's \(String(format: "%g", ms)) ms deadline (\(decided.linkName) accepted it)"))
            replies[index].accept = false
            answers[replies[index].seq] = false
            counters.deadlineWithdrawn.add(1, ordering: .relaxed)
            logger.warning("accept withdrawn: decided too late for the mech's deadline", metadata: [
                "devseq": "\(replies[index].seq)", "waited_ms": "\(waited)", "link": "\(decided.linkName)",
            ])
        }
    }

    /// Appends `batch` and publishes it; on failure starts the fail-safe (return everything,
    /// inhibit the mech). Returns the recorded events, or nil if the ledger failed.
    @discardableResult
    private func commit(_ batch: [LedgerEntry]) -> [LedgerEvent]? {
        guard !batch.isEmpty else { return [] }
        do throws(LedgerError) {
            let recorded = try ledger.append(batch)
            if let since = ledgerFailingSince { recovered(failedFor: Self.now() - since) }
            hub.publish(recorded)
            return recorded
        } catch {
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

    private func runCommands() {
        for command in commands.withLock({ queued in defer { queued.removeAll() }; return queued }) {
            switch command {
            case .inhibit(let on, let by, let completion):
                operatorInhibit = on
                mech.setInhibit(on || ledgerFailingSince != nil)
                logger.notice(on ? "mech inhibited" : "mech inhibit lifted", metadata: ["by": "\(by)"])
                if let recorded = commit([.event(.inhibit, source: sourceName, detail: ["on": "\(on)", "by": by])]) {
                    completion(.success(["inhibited": .bool(on), "seq": .int(recorded.first?.seq ?? 0)]))
                } else {
                    completion(.failure(CommandError(.unavailable, "the mech is \(on ? "inhibited" : "no longer inhibited"), but the ledger cannot record it")))
                }
            case .install(let new, let completion):
                let old = chain.swap(new)
                let detail = ["generation": "\(new.generation)", "previous": "\(old.generation)", "links": new.composition,
                              "fingerprint": new.fingerprint]
                logger.notice("chain reloaded", metadata: ["generation": "\(new.generation)", "fingerprint": "\(new.fingerprint)"])
                let recorded = commit([.event(.reload, source: nil, detail: detail)])
                completion(.success([
                    "generation": .int(Int64(new.generation)), "fingerprint": .string(new.fingerprint),
                    "links": .array(new.links.map { .string("\($0.name)=\($0.origin.plugin)@\($0.origin.version)") }),
                    "seq": .int(recorded?.first?.seq ?? 0),
                ]))
            case .reloadFailed(let reason, let completion):
                _ = commit([.event(.reloadFailed, source: nil, detail: ["reason": reason, "generation": "\(chain.current.generation)"])])
                completion(.failure(CommandError(.failed, "reload failed, chain generation \(chain.current.generation) keeps deciding: \(reason)")))
            case .collect(let by, let completion):
                guard let event = commit([.collect(by: by)])?.first else {
                    completion(.failure(CommandError(.unavailable, "the ledger cannot write: nothing collected")))
                    continue
                }
                let rows = event.detail.flatMap(JSON.parse)?["collected"]?.string.flatMap(JSON.parse) ?? .array([])
                logger.notice("cash box collected", metadata: ["by": "\(by)", "seq": "\(event.seq)"])
                completion(.success(["seq": .int(event.seq), "collected": rows]))
            }
        }
    }

    private func publishState() {
        let snapshot = State(connected: mech.isConnected, disconnectedReason: mech.disconnectedReason,
                             inhibited: operatorInhibit, ledgerFailing: ledgerFailingSince != nil)
        state.withLock { $0 = snapshot }
    }

    private func retryLedgerIfFailing() {
        guard let since = ledgerFailingSince else { return }
        let now = Self.now()
        guard now - lastRecoveryAttempt > 5_000_000_000 else { return }
        lastRecoveryAttempt = now
        let seconds = String(format: "%.1f", Double(now - since) / 1e9)
        if let recorded = try? ledger.append([.event(.ledgerRecovered, source: nil, detail: ["failed_for_s": seconds])]) {
            hub.publish(recorded)
            ledgerFailingSince = nil
            logger.notice("ledger writes again: accepting coins", metadata: ["failed_for_s": "\(seconds)"])
            mech.setInhibit(operatorInhibit)
        }
    }

    private func recovered(failedFor nanoseconds: UInt64) {
        ledgerFailingSince = nil
        logger.notice("ledger writes again: accepting coins", metadata: ["failed_for_s": "\(String(format: "%.1f", Double(nanoseconds) / 1e9))"])
        mech.setInhibit(operatorInhibit)
    }

    static func now() -> UInt64 { cm_monotonic_ns() }
}
