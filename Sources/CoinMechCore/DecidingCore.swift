import CoinMechModel

/// The deciding daemon's policy as a deterministic state machine: what the mech said and what
/// the clock says go in (`CoreInput`), what to record, answer, ask and publish comes out
/// (`CoreOutput`), in the order it must happen. It does no I/O and never reads a clock, so it
/// is tested with simulated time, and every interleaving its tests try is one the daemon can meet.
///
/// The money rules live here:
/// - a batch of readings is decided, planned (`AnswerPlan`: accepts that can no longer reach the
///   mech in time are withdrawn) and made durable before any answer: committed to the ledger,
///   or, for a batch of fresh decisions with a decision journal, appended to the journal and
///   committed to the ledger after the answers (the journal is replayed into the ledger at
///   start); answers, then publication;
/// - an accept is pending until the mech's word settles it (`PendingCoins`), once;
/// - the mech's sessions are known by boot (`EpochBook`), so a question reaches the right one;
/// - a ledger that cannot write returns every coin and inhibits the mech; one that is merely
///   busy returns the batch's coins and nothing more.
///
/// Protocol with its shell: `step` returns outputs to carry out in order; when the last one
/// is `.commit`, the shell records it and steps `.committed` or `.commitFailed` before any other
/// input.
public struct DecidingCore: Sendable {
    /// What the core is configured with.
    public struct Settings: Sendable {
        public var source: String
        public var credit: CreditRule
        /// The mech's answer deadline (nil: a mech that waits for its answer, such as GPIO).
        public var deadline: AnswerDeadline?
        /// The line the answers travel on (nil: they act at once).
        public var line: LineTiming?
        /// How long the mech takes at most to store or return an accepted coin.
        public var confirmationWindow: Duration = .seconds(1)
        /// How long to wait for the mech's `SESSION` after connecting before querying anyway.
        public var sessionWait: Duration = .seconds(2)
        /// How often a failing ledger is tried again.
        public var ledgerRetry: Duration = .seconds(5)
        /// How long a write without readings may wait for another writer.
        public var busyTimeout: Duration = .seconds(5)
        /// Teach mode commits no window fitted on fewer sample coins than this.
        public var teachMinimumSamples = 10
        /// The shell keeps a decision journal (`.journal`): a batch of fresh decisions is made
        /// durable there and answered before its ledger commit, which then leaves the mech's
        /// wait (docs/LEDGER.md, "The decision journal").
        public var decisionJournal = false

        public init(source: String, credit: CreditRule, deadline: AnswerDeadline?, line: LineTiming?) {
            self.source = source
            self.credit = credit
            self.deadline = deadline
            self.line = line
        }
    }

    /// What the ledger held at start.
    public struct Restored: Sendable {
        public var state: SourceState
        public var boots: [Int64: UInt64]
        public var pending: [PendingRecord]
        /// Unconfirmed coins the mech may still know (`Ledger.unconfirmedCoins`).
        public var unconfirmed: [PendingRecord]

        public init(state: SourceState, boots: [Int64: UInt64], pending: [PendingRecord], unconfirmed: [PendingRecord] = []) {
            self.state = state
            self.boots = boots
            self.pending = pending
            self.unconfirmed = unconfirmed
        }
    }

    /// What `status` shows of the core.
    public struct Snapshot: Sendable, Equatable {
        public var counters = CoreCounters()
        public var inhibited = false
        /// A link hung or quarantined keeps the mech inhibited: which, and why.
        public var pluginInhibit: String?
        public var ledgerFailing = false
        public var pending = 0
        /// Teach mode, while it lasts.
        public var teach: TeachSession?

        public init(counters: CoreCounters = CoreCounters(), inhibited: Bool = false, pluginInhibit: String? = nil, ledgerFailing: Bool = false,
                    pending: Int = 0, teach: TeachSession? = nil) {
            self.counters = counters
            self.inhibited = inhibited
            self.pluginInhibit = pluginInhibit
            self.ledgerFailing = ledgerFailing
            self.pending = pending
            self.teach = teach
        }
    }

    public let settings: Settings
    private let logger: CoreLogger
    private var tracker: DeviceSequenceTracker
    private var epochs: EpochBook
    private var pending: PendingCoins
    /// Answers given in the current epoch, by device seq, for repeated sentences.
    private var answers: [UInt64: Answered] = [:]
    private var operatorInhibit = false
    /// Why a link out of service keeps the mech inhibited (nil: none does).
    private var pluginInhibit: String?
    private var ledgerFailingSince: Instant?
    private var lastRecoveryAttempt: Instant?
    private var connected = false
    /// Since the mech connected, waiting for it to name its session before querying.
    private var awaitingSessionSince: Instant?
    /// Occurrences a failed commit could not record: recorded with the next one.
    private var carriedOver: [Occurrence] = []
    /// Batches answered from the decision journal whose ledger commit failed: their decisions
    /// go first into the commit that ends the ledger's failure, and their accepts are pending
    /// from then (the mech is asked about them, as after a restart).
    private var journalOwed: [Batch] = []
    /// Every journalled decision is on the ledger: the journal may be emptied once a synced
    /// commit has made them durable there — after that commit's answers, never before them.
    private var journalTrimDue = false
    /// A journalled batch was committed without a sync since the last synced commit that wrote.
    private var journalAheadOfSync = false
    private var awaiting: Awaiting?
    /// Teach mode: readings are samples and every coin is returned (nil: deciding as usual).
    public private(set) var teach: TeachSession?
    public private(set) var counters = CoreCounters()

    public init(settings: Settings, restored: Restored, logger: CoreLogger, now: Instant) {
        self.settings = settings
        self.logger = logger
        let state = restored.state
        tracker = DeviceSequenceTracker(
            epoch: state.epoch, lastSeq: state.lastDeviceSeq,
            recent: state.recent.map {
                ($0.deviceSeq, Measurement(diameterMM: $0.diameterMM, weightG: $0.weightG, thicknessMM: $0.thicknessMM, channel: $0.channel, alloy: $0.alloy))
            })
        for decision in state.recent { answers[decision.deviceSeq] = Answered(accept: decision.accepted, sentAt: nil) }
        epochs = EpochBook(boots: restored.boots)
        pending = PendingCoins(confirmationWindow: settings.confirmationWindow)
        for coin in restored.pending {
            pending.add(seq: coin.seq, epoch: coin.epoch, deviceSeq: coin.deviceSeq, answeredAt: now, restored: true)
        }
        if settings.credit == .onConfirmation {
            for coin in restored.unconfirmed {
                pending.addUnconfirmed(seq: coin.seq, epoch: coin.epoch, deviceSeq: coin.deviceSeq, now: now)
            }
        }
    }

    /// What `status` shows.
    public var snapshot: Snapshot {
        // Accepts answered from the journal and waiting for the ledger are pending coins too.
        let owed = journalOwed.reduce(0) { count, batch in count + batch.items.filter(\.decided.verdict.isAccept).count }
        return Snapshot(counters: counters, inhibited: operatorInhibit, pluginInhibit: pluginInhibit, ledgerFailing: ledgerFailingSince != nil,
                        pending: pending.count + owed, teach: teach)
    }

    /// The mech returns every coin while the operator, a failing ledger or a link out of service
    /// says so.
    private var mechInhibited: Bool { operatorInhibit || ledgerFailingSince != nil || pluginInhibit != nil }

    /// True while a `.commit` (or a calibration's `.stageCalibration` or `.installCalibration`)
    /// waits for its outcome.
    public var isAwaitingCommit: Bool { awaiting != nil }

    /// When the core next has something to do without input (a query, the session wait, a
    /// ledger retry).
    public var nextWake: Instant? {
        var wakes: [Instant] = []
        if connected, let due = pending.nextDue { wakes.append(due) }
        if let since = awaitingSessionSince { wakes.append(since + settings.sessionWait) }
        if ledgerFailingSince != nil { wakes.append((lastRecoveryAttempt ?? .init(nanoseconds: 0)) + settings.ledgerRetry) }
        return wakes.min()
    }

    /// Coins from before a restart that a source no longer confirming coins can never settle.
    public mutating func start(now: Instant) -> [CoreOutput] {
        guard settings.credit == .atOnce, !pending.isEmpty else { return [] }
        return settle(pending.all.map {
            PendingCoins.Settlement(coin: $0, resolution: .unconfirmed, message: "the source no longer confirms coins (source.confirmations is off)")
        })
    }

    /// Takes one input at `now` and returns what to do, in order. `decide` asks the chain.
    public mutating func step(_ input: CoreInput, at now: Instant, decide: (Candidate) -> Decided) -> [CoreOutput] {
        switch input {
        case .committed(let result):
            guard let awaited = awaiting.take() else { preconditionFailure("a commit outcome with no commit awaited") }
            return committed(awaited, result, now: now)
        case .commitFailed(let error):
            guard let awaited = awaiting.take() else { preconditionFailure("a commit outcome with no commit awaited") }
            return commitFailed(awaited, error, now: now)
        case .journalled:
            guard case .journal(let batch, let entries, _)? = awaiting.take() else { preconditionFailure("a journal outcome with no journal awaited") }
            return journalled(batch, entries: entries, now: now)
        case .journalFailed(let reason):
            guard case .journal(let batch, let entries, let budget)? = awaiting.take() else { preconditionFailure("a journal outcome with no journal awaited") }
            logger.error("the decision journal could not be written: this batch is committed to the ledger before it is answered", metadata: ["error": "\(reason)"])
            awaiting = .batch(batch)
            return [.commit(entries, busyTimeout: budget)]
        case .journalDeclined:
            guard case .journal(let batch, let entries, let budget)? = awaiting.take() else { preconditionFailure("a journal outcome with no journal awaited") }
            awaiting = .batch(batch)
            return [.commit(entries, busyTimeout: budget)]
        case .calibrationStaged(let result):
            guard case .staging(let ticket, let by)? = awaiting.take() else { preconditionFailure("a staged calibration nobody asked for") }
            return staged(result, ticket: ticket, by: by, now: now)
        case .calibrationInstalled(let result):
            guard case .installing(let ticket, let seq)? = awaiting.take() else { preconditionFailure("an installed calibration nobody asked for") }
            return installed(result, ticket: ticket, seq: seq)
        default:
            precondition(awaiting == nil, "a new input while a commit's outcome is awaited")
        }
        switch input {
        case .mech(let events):
            return handle(events, now: now, decide: decide)
        case .tick:
            return tick(now: now)
        case .inhibit(let on, let by, let ticket):
            operatorInhibit = on
            logger.notice(on ? "mech inhibited" : "mech inhibit lifted", metadata: ["by": "\(by)"])
            return [.setInhibit(mechInhibited)] + commit([.note(.inhibit(source: settings.source, on: on, by: by))],
                                                         awaiting: .command(ticket, .inhibit(on)), now: now)
        case .pluginHealth(let reason, let record):
            var outputs: [CoreOutput] = []
            if reason != pluginInhibit {
                pluginInhibit = reason
                if let reason {
                    logger.critical("mech inhibited: \(reason)")
                } else {
                    logger.notice("every link is in service again: the plugins no longer inhibit the mech")
                }
                outputs.append(.setInhibit(mechInhibited))
            }
            return record.isEmpty ? outputs : outputs + commit(record.map { .note($0) }, awaiting: .notes(record), now: now)
        case .collect(let by, let ticket):
            return commit([.collect(by: by)], awaiting: .command(ticket, .collect), now: now)
        case .reload(let record, let ticket):
            return commit([.note(.reload(record))], awaiting: .command(ticket, .reload(record)), now: now)
        case .reloadFailed(let reason, let ticket):
            logger.error("reload failed; the current chain keeps deciding", metadata: ["reason": "\(reason)"])
            return commit([.note(.reloadFailed(reason: reason, generation: currentGeneration))], awaiting: .command(ticket, .reloadFailed(reason)), now: now)
        case .stop(let errors):
            let counts = Occurrence.ShutdownCounts(
                readings: counters.readings, duplicates: counters.duplicates, garbageBytes: errors.garbageBytes,
                badChecksums: errors.badChecksums, truncated: errors.truncated, overlong: errors.overlong, malformed: errors.malformed,
                pending: pending.count)
            // Teach mode does not outlive the daemon: its end is on the record with the shutdown.
            let ended = teach.map { [Occurrence.teachAbort(source: settings.source, currency: $0.request.currency, code: $0.request.code,
                                                            samples: $0.samples.count, by: "coinmechd (stopping)")] } ?? []
            teach = nil
            return [.setInhibit(true)] + commit((ended + [.shutdown(source: settings.source, counts: counts)]).map { .note($0) },
                                                 awaiting: .publishOnly, now: now)
        case .teachStart(let request, let by, let ticket):
            if let teach {
                return [.reply(ticket, .teachRefused("already teaching \(teach.request.currency) \(teach.request.code) (\(teach.samples.count) of "
                    + "\(teach.request.coins) sample coins in, started by \(teach.by)): commit or abort it first"))]
            }
            let session = TeachSession(request: request, by: by, startedAt: now)
            let record = Occurrence.TeachStartRecord(source: settings.source, currency: request.currency, code: request.code, coins: request.coins,
                                                     link: request.link, file: request.file, by: by)
            return commit([.note(.teachStart(record))], awaiting: .command(ticket, .teachStart(session)), now: now)
        case .teachCommit(let by, let ticket):
            guard let teach else { return [.reply(ticket, .teachRefused(Self.notTeaching))] }
            guard teach.samples.count >= settings.teachMinimumSamples else {
                return [.reply(ticket, .teachRefused("only \(teach.samples.count) sample coins of \(teach.request.currency) \(teach.request.code) are in; "
                    + "at least \(settings.teachMinimumSamples) are needed to commit (\(teach.request.coins) asked for): insert more, or abort"))]
            }
            awaiting = .staging(ticket, by: by)
            return [.stageCalibration(teach)]
        case .teachAbort(let by, let ticket):
            guard let teach else { return [.reply(ticket, .teachRefused(Self.notTeaching))] }
            let occurrence = Occurrence.teachAbort(source: settings.source, currency: teach.request.currency, code: teach.request.code,
                                                   samples: teach.samples.count, by: by)
            return commit([.note(occurrence)], awaiting: .command(ticket, .teachAbort(teach)), now: now)
        case .committed, .commitFailed, .journalled, .journalFailed, .journalDeclined, .calibrationStaged, .calibrationInstalled:
            return []
        }
    }

    static let notTeaching = "not teaching: start with coinctl teach start CURRENCY CODE"

    // MARK: Teach mode

    /// The calibration is written beside its file: record it, or say why it could not be written.
    private mutating func staged(_ result: Result<StagedCalibration, TeachFailure>, ticket: Ticket, by: String, now: Instant) -> [CoreOutput] {
        switch result {
        case .success(var staged):
            staged.record.by = by
            return commit([.note(.teachCommit(staged.record))], awaiting: .command(ticket, .teachCommit(staged)), now: now)
        case .failure(let failure):
            logger.error("teach mode: the calibration could not be written", metadata: ["error": "\(failure.message)"])
            return [.reply(ticket, .teachFailed("\(failure.message); still teaching"))]
        }
    }

    /// The recorded calibration is in place, and teach mode ends; or it is not, and teach mode goes on.
    private mutating func installed(_ result: Result<StagedCalibration, TeachFailure>, ticket: Ticket, seq: Int64) -> [CoreOutput] {
        switch result {
        case .success(let staged):
            teach = nil
            logger.notice("teach mode: calibration committed", metadata: [
                "code": "\(staged.record.code)", "samples": "\(staged.record.samples)", "file": "\(staged.record.file)", "seq": "\(seq)",
            ])
            return [.reply(ticket, .taught(staged.record, seq: seq))]
        case .failure(let failure):
            logger.critical("teach mode: a recorded calibration could not be put in place", metadata: ["seq": "\(seq)", "error": "\(failure.message)"])
            return [.reply(ticket, .teachFailed("recorded as event #\(seq), but not put in place: \(failure.message); "
                + "coin-table keeps its previous windows; still teaching: commit again"))]
        }
    }

    /// The chain generation of the last decision or record the core knows (for reload records).
    public var currentGeneration: UInt64 = 0

    // MARK: A batch

    /// What a batch waits for its commit with.
    private enum Awaiting: Sendable {
        case batch(Batch)
        /// A batch of fresh decisions in the decision journal: answered once it is durable there,
        /// then committed (`entries`, within `budget` if it falls back to committing first).
        case journal(Batch, entries: [LedgerEntry], budget: Duration)
        /// A journalled batch, answered: its ledger commit, and the late answers to note after it.
        case answered(Batch, late: [Occurrence])
        case settle([PendingCoins.Settlement])
        case command(Ticket, Command)
        /// A failing ledger tried again, with the occurrences it could not record.
        case recovery([Occurrence])
        /// Occurrences to record and publish; carried to the next commit if this one fails.
        case notes([Occurrence])
        case publishOnly
        /// A calibration being written beside its file, committed by `by`.
        case staging(Ticket, by: String)
        /// A recorded calibration (event `seq`) being put in place.
        case installing(Ticket, seq: Int64)
    }

    private enum Command: Sendable {
        case inhibit(Bool)
        case collect
        case reload(Occurrence.ReloadRecord)
        case reloadFailed(String)
        case teachStart(TeachSession)
        case teachCommit(StagedCalibration)
        case teachAbort(TeachSession)
    }

    /// A reading decided in this batch.
    private struct Item: Sendable {
        var reading: MechReading
        var epoch: Int64
        var decided: Decided
        /// Its entry's index in the commit.
        var entryIndex = -1
        /// In teach mode: the sample it is, kept once the coin's return is recorded, or nil for
        /// a reading returned without being kept.
        var taught: TeachSession.Sample??
    }

    /// The answer a reading got, and when it left the mech (nil: restored from the ledger): a
    /// repeat is answered "accept" again only while that can still reach the mech for it.
    private struct Answered: Sendable {
        var accept: Bool
        var sentAt: Instant?
    }

    /// An answer owed to the mech for a sentence of the batch.
    private enum Owed: Sendable {
        /// The reading decided in this batch as `items[index]`.
        case decided(Int)
        /// A repeated sentence: answered as its coin was (`original` in this batch, or `answer`).
        case repeated(seq: UInt64, original: Int?, answer: Bool)
    }

    private struct Batch: Sendable {
        var items: [Item]
        var owed: [Owed]
        var plan: AnswerPlan
        var settlements: [PendingCoins.Settlement]
        /// Index of the first settlement entry in the commit.
        var settlementStart: Int
        var occurrences: [Occurrence]
    }

    private mutating func handle(_ events: [MechEvent], now: Instant, decide: (Candidate) -> Decided) -> [CoreOutput] {
        guard !events.isEmpty else { return [] }
        var outputs: [CoreOutput] = []
        var occurrences = carriedOver
        carriedOver = []
        var items: [Item] = []
        var owed: [Owed] = []
        var settlements: [PendingCoins.Settlement] = []
        /// Device seqs decided in this batch, for a sentence repeated within it.
        var inBatch: [UInt64: Int] = [:]
        /// Teach mode's samples among this batch's readings.
        var samplesInBatch = 0
        for event in events {
            switch event {
            case .connected(let path):
                logger.notice("mech connected", metadata: ["device": "\(path)"])
                connected = true
                counters.connects += 1
                if counters.connects > 1 { counters.reconnects += 1 }
                occurrences.append(.sourceConnected(source: settings.source, device: path))
                outputs.append(.setInhibit(mechInhibited))
                awaitingSessionSince = settings.credit == .onConfirmation ? now : nil
            case .lost(let path, let reason):
                logger.warning("mech lost", metadata: ["device": "\(path)", "reason": "\(reason)"])
                connected = false
                awaitingSessionSince = nil
                occurrences.append(.sourceLost(source: settings.source, device: path, reason: reason))
            case .powerUp(let boot) where boot != nil && epochs.boots[tracker.epoch] == boot:
                // The current epoch already is this session (it began when the numbers went back):
                // a late announcement, not a second power-up.
                logger.info("the mech announced a power-up of the session already known", metadata: ["boot": "\(boot!)"])
                awaitingSessionSince = nil
            case .powerUp(let boot):
                // A power-up that names its boot names the session too.
                if boot != nil { awaitingSessionSince = nil }
                tracker.powerUp()
                epochs.record(epoch: tracker.epoch, boot: boot)
                answers.removeAll()
                inBatch.removeAll()
                logger.notice("mech powered up", metadata: ["epoch": "\(tracker.epoch)", "boot": "\(boot.map(String.init) ?? "?")"])
                occurrences.append(.mechPowerUp(source: settings.source, epoch: tracker.epoch, boot: boot, implied: false))
                if let boot, let conflict = repeatedBoot(boot) {
                    occurrences.append(conflict)
                    settlements += pending.unaskable(epochs: epochs).filter { epochs.boots[$0.coin.epoch] != nil }
                }
            case .session(let boot):
                switch epochs.session(boot, currentEpoch: tracker.epoch) {
                case .same:
                    break
                case .assigned:
                    epochs.record(epoch: tracker.epoch, boot: boot)
                    occurrences.append(.mechSession(source: settings.source, epoch: tracker.epoch, boot: boot))
                    if let conflict = repeatedBoot(boot) { occurrences.append(conflict) }
                case .newEpoch:
                    tracker.powerUp()
                    epochs.record(epoch: tracker.epoch, boot: boot)
                    answers.removeAll()
                    inBatch.removeAll()
                    logger.warning("the mech powered up while the daemon was away: new epoch", metadata: ["epoch": "\(tracker.epoch)", "boot": "\(boot)"])
                    occurrences.append(.mechPowerUp(source: settings.source, epoch: tracker.epoch, boot: boot, implied: true))
                    if let conflict = repeatedBoot(boot) { occurrences.append(conflict) }
                }
                awaitingSessionSince = nil
                pending.askAllNow(now)
                settlements += pending.unaskable(epochs: epochs)
            case .status(let status, let detail):
                logger.warning("mech status", metadata: ["status": "\(status.rawValue)", "detail": "\(detail ?? "")"])
                occurrences.append(.mechStatus(source: settings.source, status: status.rawValue.lowercased(), detail: detail ?? ""))
            case .protocolError(let error):
                counters.protocolErrors += 1
                logger.warning("bad data from mech", metadata: ["error": "\(error)"])
                // A garbled sentence may have been the mech's POWERUP: until it names its
                // session again, no coin is filed under a guessed boot (found by the spin model,
                // model/README.md, rule F4).
                if settings.credit == .onConfirmation, connected, awaitingSessionSince == nil {
                    awaitingSessionSince = now
                    outputs.append(.askSession)
                }
            case .confirmation(let seq, let fate) where awaitingSessionSince != nil:
                // A `$CMC` names no boot: while the session is unknown, which epoch it belongs
                // to is a guess. The coin stays pending and the mech's journal is asked by boot
                // once the session is known (model/README.md, rule F1).
                outputs.append(.failpoint(.confirmationReceived))
                logger.debug("confirmation while the mech's session is unknown: asked again by its boot", metadata: ["devseq": "\(seq)", "fate": "\(fate)"])
            case .confirmation(let seq, let fate):
                outputs.append(.failpoint(.confirmationReceived))
                if let settlement = pending.settle(epoch: tracker.epoch, deviceSeq: seq, fate: fate, fromJournal: false) {
                    settlements.append(settlement)
                } else {
                    logger.debug("confirmation for a coin that is not pending", metadata: ["devseq": "\(seq)", "fate": "\(fate)"])
                }
            case .journal(let boot, let seq, let fate):
                outputs.append(.failpoint(.confirmationReceived))
                if let epoch = epochs.epoch(ofBoot: boot), let settlement = pending.settle(epoch: epoch, deviceSeq: seq, fate: fate, fromJournal: true) {
                    settlements.append(settlement)
                } else {
                    logger.debug("journal answer for a coin that is not pending", metadata: ["boot": "\(boot)", "devseq": "\(seq)", "fate": "\(fate)"])
                }
            case .reading(let reading):
                let epoch: Int64
                switch tracker.classify(reading.deviceSeq, reading.measurement) {
                case .duplicate:
                    counters.duplicates += 1
                    logger.info("duplicate sentence answered again", metadata: ["devseq": "\(reading.deviceSeq)"])
                    // "Accept" again only while it can still matter for the original (within its
                    // deadline) and the mech's session is known: otherwise the same number and
                    // measurement may be a new coin of a mech that rebooted meanwhile, which an
                    // accept would take into the cash box with no decision of its own.
                    let original = answers[reading.deviceSeq]
                    let stillMatters = original?.sentAt.map { sentAt in settings.deadline.map { now <= $0.due(sentAt: sentAt) } ?? true } ?? false
                    let again = original?.accept == true && awaitingSessionSince == nil && stillMatters
                    owed.append(.repeated(seq: reading.deviceSeq, original: inBatch[reading.deviceSeq], answer: again))
                    continue
                case .conflict where settings.credit == .onConfirmation:
                    // A number already used in this epoch: a power-up nobody announced, or a
                    // garbled number. Only the mech's SESSION answer tells (a new boot starts a
                    // new epoch); until it comes, this coin and the next are returned, and no
                    // epoch is guessed.
                    counters.protocolErrors += 1
                    logger.warning("device number went back without a power-up: returned; asking the mech which session it is in",
                                   metadata: ["devseq": "\(reading.deviceSeq)", "epoch": "\(tracker.epoch)"])
                    occurrences.append(.mechStatus(source: settings.source, status: "sequence_conflict",
                                                   detail: "devseq \(reading.deviceSeq) again with another measurement in epoch \(tracker.epoch): returned"))
                    owed.append(.repeated(seq: reading.deviceSeq, original: nil, answer: false))
                    if awaitingSessionSince == nil {
                        awaitingSessionSince = now
                        outputs.append(.askSession)
                    }
                    continue
                case .conflict:
                    // A mech that cannot name its session: the numbers going back are the only sign.
                    let newEpoch = tracker.impliedPowerUp(reading.deviceSeq, reading.measurement)
                    answers.removeAll()
                    inBatch.removeAll()
                    logger.warning("device numbers went back without a power-up: new epoch", metadata: ["epoch": "\(newEpoch)"])
                    occurrences.append(.mechPowerUp(source: settings.source, epoch: newEpoch, boot: nil, implied: true))
                    epoch = newEpoch
                case .new(let current):
                    epoch = current
                }
                var decided: Decided
                var taught: TeachSession.Sample??
                if let fault = reading.alloyFault {
                    // Figures no metal gives: never matched, returned at once with the field named.
                    counters.badAlloy += 1
                    decided = Decided(verdict: .reject(reason: fault.reason, message: fault.message), link: "source", chainGeneration: currentGeneration)
                } else if let rejection = reading.rejection {
                    decided = Decided(verdict: .reject(reason: rejection, message: "the source could not measure this coin reliably"),
                                      link: "source", chainGeneration: currentGeneration)
                } else if operatorInhibit {
                    decided = Decided(verdict: .reject(reason: "inhibited", message: "the mech is inhibited"), link: "inhibit",
                                      chainGeneration: currentGeneration)
                } else if let pluginInhibit {
                    // Fail closed: no link decides while one of them is out of service.
                    decided = Decided(verdict: .reject(reason: "inhibited", message: "the mech is inhibited: \(pluginInhibit)"), link: "inhibit",
                                      chainGeneration: currentGeneration)
                } else if let teach {
                    // Teach mode: no coin is credited, so the chain is not asked.
                    let judged = teach.judge(reading, epoch: epoch, pendingInBatch: samplesInBatch)
                    taught = .some(judged.sample)
                    if judged.sample != nil { samplesInBatch += 1 }
                    decided = Decided(verdict: .reject(reason: "teaching", message: judged.message), link: "teach", chainGeneration: currentGeneration)
                } else {
                    decided = decide(Candidate(reading: reading, epoch: epoch))
                    currentGeneration = decided.chainGeneration
                }
                // Until the mech names its session after a connect, this reading's epoch is a
                // guess: had the mech rebooted meanwhile, the coin would be filed under the old
                // boot, its confirmation dropped and its query sent to the wrong journal. Fail
                // closed: return it (the mech names its session within milliseconds).
                if awaitingSessionSince != nil, decided.verdict.isAccept {
                    decided = Decided(verdict: .reject(reason: "session_unknown", message: Self.sessionUnknownMessage), link: "source",
                                      chainGeneration: currentGeneration)
                }
                counters.readings += 1
                logger.debug("decision", metadata: [
                    "devseq": "\(reading.deviceSeq)", "epoch": "\(epoch)", "verdict": "\(decided.verdict)", "link": "\(decided.link)",
                    "generation": "\(decided.chainGeneration)", "waited_us": "\((now - reading.sentAt).nanoseconds / 1000)",
                ])
                inBatch[reading.deviceSeq] = items.count
                owed.append(.decided(items.count))
                items.append(Item(reading: reading, epoch: epoch, decided: decided, taught: taught))
                answers[reading.deviceSeq] = Answered(accept: decided.verdict.isAccept, sentAt: reading.sentAt)
            }
        }

        // Which accepts can still reach the mech in time, in which order the answers go: planned
        // from when the last verdict was ready (the chain may have taken a while).
        let decidedAt = max(now, items.compactMap(\.decided.decidedAt).max() ?? now)
        let plan = AnswerPlan(owed.enumerated().map { position, owed in
            switch owed {
            case .decided(let index):
                return AnswerPlan.Answer(index: position, accept: items[index].decided.verdict.isAccept, sentAt: items[index].reading.sentAt,
                                         transit: transit(items[index].reading.deviceSeq))
            case .repeated(let seq, let original, let answer):
                return AnswerPlan.Answer(index: position, accept: original.map { items[$0].decided.verdict.isAccept } ?? answer,
                                         sentAt: original.map { items[$0].reading.sentAt } ?? now, transit: transit(seq))
            }
        }, now: decidedAt, deadline: settings.deadline)
        for position in plan.withdrawn {
            guard case .decided(let index) = owed[position] else { continue }
            items[index].decided = withdrawn(items[index], now: decidedAt)
            answers[items[index].reading.deviceSeq]?.accept = false
        }
        var entries: [LedgerEntry] = occurrences.map { .note($0) }
        for index in items.indices {
            items[index].entryIndex = entries.count
            entries.append(.decision(record(items[index]), credit: settings.credit))
        }
        let settlementStart = entries.count
        entries += settlements.map(Self.entry)
        let batch = Batch(items: items, owed: owed, plan: plan, settlements: settlements, settlementStart: settlementStart, occurrences: occurrences)
        guard !entries.isEmpty else {
            // Only repeated sentences of coins decided earlier: answer them as before.
            return outputs + answerAll(batch, result: nil, now: now)
        }
        outputs.append(.failpoint(.beforeCommit))
        let budget = plan.commitBudget(deadline: settings.deadline) ?? (items.isEmpty ? settings.busyTimeout : .seconds(1))
        if journals(batch) {
            awaiting = .journal(batch, entries: entries, budget: budget)
            // Lines the ledger does not hold yet: no trim until they are on it.
            journalTrimDue = false
            outputs.append(.journal(batch.items.map { record($0) }))
            return outputs
        }
        outputs.append(.commit(entries, busyTimeout: budget))
        awaiting = .batch(batch)
        return outputs
    }

    // MARK: The decision journal

    /// Whether `batch` is answered from the decision journal: fresh decisions of a mech that
    /// confirms, nothing else in the batch, a ledger that writes. Everything else is committed
    /// first: notes and settlements are not idempotent to replay, a repeat's answer may come
    /// from the ledger, and a failing ledger's commit is what tells it writes again.
    private func journals(_ batch: Batch) -> Bool {
        settings.decisionJournal && settings.credit == .onConfirmation && ledgerFailingSince == nil && journalOwed.isEmpty
            && teach == nil && !batch.items.isEmpty && batch.occurrences.isEmpty && batch.settlements.isEmpty
            && batch.owed.allSatisfy { if case .decided = $0 { return true }; return false }
    }

    /// The batch's decisions are durable in the journal: answer, then commit them to the ledger.
    private mutating func journalled(_ batch: Batch, entries: [LedgerEntry], now: Instant) -> [CoreOutput] {
        var outputs: [CoreOutput] = [.failpoint(.journalled)]
        outputs += answerAll(batch, result: nil, journalled: true, now: now)
        outputs.append(.failpoint(.answerWritten))
        awaiting = .answered(batch, late: lateAnswers(batch, now: now))
        // No deadline waits on this commit, nor a sync: the journal holds the decisions.
        outputs.append(.commitJournalled(entries))
        return outputs
    }

    /// A journalled batch's accepts are pending once their decisions are on the ledger.
    private mutating func pend(_ batch: Batch, outcomes: ArraySlice<EntryOutcome>, now: Instant) {
        for (item, outcome) in zip(batch.items, outcomes) where item.decided.verdict.isAccept {
            switch outcome {
            case .recorded(let events):
                guard let decision = events.first else { continue }
                pending.add(seq: decision.seq, epoch: item.epoch, deviceSeq: item.reading.deviceSeq, answeredAt: now)
            case .duplicate(let seq, let accepted, let pendingOnLedger) where accepted && pendingOnLedger:
                // Its own commit landed though it reported a failure (the ledger's restore of
                // `synchronous` failed after the commit, say), and the commit that ended the
                // failure found it there.
                pendDuplicate(item, seq: seq, now: now)
            case .duplicate(let seq, let accepted, _):
                // The tracker said fresh, the ledger knew the coin settled: only another writer
                // does this. The ledger's own decision stands.
                logger.error("a journalled decision was on the ledger already: the ledger's decision stands", metadata: [
                    "epoch": "\(item.epoch)", "devseq": "\(item.reading.deviceSeq)", "seq": "\(seq)", "ledger_accepted": "\(accepted)",
                ])
            default:
                continue
            }
        }
    }

    /// A decision the ledger already held: its decision stands, and an accept still pending
    /// there is pending here too — asked about and settled like any other, not left on the
    /// ledger with nothing waiting for its confirmation.
    private mutating func pendDuplicate(_ item: Item, seq: Int64, now: Instant) {
        logger.notice("a decision was on the ledger already, pending: the mech is asked about it", metadata: [
            "epoch": "\(item.epoch)", "devseq": "\(item.reading.deviceSeq)", "seq": "\(seq)",
        ])
        pending.add(seq: seq, epoch: item.epoch, deviceSeq: item.reading.deviceSeq, answeredAt: now)
    }

    private func transit(_ deviceSeq: UInt64) -> Duration { settings.line?.answerTransit(deviceSeq: deviceSeq) ?? .zero }

    private func record(_ item: Item) -> DecisionRecord {
        DecisionRecord(
            source: settings.source, epoch: item.epoch, deviceSeq: item.reading.deviceSeq, diameterMM: item.reading.measurement.diameterMM,
            weightG: item.reading.measurement.weightG, thicknessMM: item.reading.measurement.thicknessMM,
            channel: item.reading.measurement.channel, verdict: item.decided.verdict, link: item.decided.link,
            chainGeneration: item.decided.chainGeneration, alloy: item.reading.measurement.alloy)
    }

    /// The decision recorded instead of an accept that could no longer reach the mech in time.
    private mutating func withdrawn(_ item: Item, now: Instant) -> Decided {
        let waited = (now - item.reading.sentAt).milliseconds
        let deadline = settings.deadline?.deadline.milliseconds ?? 0
        counters.deadlineWithdrawn += 1
        logger.warning("accept withdrawn: too late for the mech's deadline", metadata: [
            "devseq": "\(item.reading.deviceSeq)", "waited_ms": "\(Self.tenths(waited))", "link": "\(item.decided.link)",
        ])
        return Decided(
            verdict: .reject(reason: "deadline_passed",
                             message: "decided \(Self.tenths(waited)) ms after the reading left the mech, too late for its \(Self.plain(deadline)) ms deadline (\(item.decided.link) accepted it)"),
            link: "deadline", chainGeneration: item.decided.chainGeneration)
    }

    /// The batch committed: answer, count, publish.
    private mutating func committed(_ awaited: Awaiting, _ result: AppendResult, now: Instant) -> [CoreOutput] {
        // Decisions answered from the journal and not yet on the ledger keep it failing until
        // the recovery commit that carries them.
        let recovered: Instant?
        if case .recovery = awaited { recovered = ledgerFailingSince } else { recovered = journalOwed.isEmpty ? ledgerFailingSince : nil }
        if let since = recovered {
            ledgerFailingSince = nil
            logger.notice("ledger writes again: accepting coins", metadata: ["failed_for_s": "\(Self.tenths((now - since).milliseconds / 1000))"])
        }
        var outputs: [CoreOutput] = []
        // Every commit but a journalled batch's is synced; one that wrote made every frame
        // before it durable too (a commit that wrote nothing syncs nothing).
        if case .answered = awaited {} else if !result.events.isEmpty { journalAheadOfSync = false }
        switch awaited {
        case .batch(let batch):
            if !batch.settlements.isEmpty { outputs.append(.failpoint(.confirmationCommitted)) }
            outputs.append(.failpoint(.afterCommit))
            outputs += answerAll(batch, result: result, now: now)
            outputs.append(.failpoint(.answerWritten))
            for (index, item) in batch.items.enumerated() where accepted(batch, index, result) {
                if case .duplicate(let seq, true, true) = result.outcomes[item.entryIndex], settings.credit == .onConfirmation {
                    pendDuplicate(item, seq: seq, now: now)
                    continue
                }
                guard case .recorded(let events) = result.outcomes[item.entryIndex], let decision = events.first else { continue }
                if settings.credit == .onConfirmation {
                    pending.add(seq: decision.seq, epoch: item.epoch, deviceSeq: item.reading.deviceSeq, answeredAt: now)
                } else {
                    counters.credited += 1
                }
            }
            for item in batch.items {
                // A sample counts once its return is on the ledger (not a repeat of a coin decided before).
                guard case .some(let sample) = item.taught, case .recorded = result.outcomes[item.entryIndex] else { continue }
                if let sample { teach?.keep(sample) } else { teach?.skipped() }
            }
            count(batch.settlements, outcomes: Array(result.outcomes[batch.settlementStart...]))
            pending.settled(batch.settlements)
            outputs += [.publish(result.events), .failpoint(.published)]
            let late = lateAnswers(batch, now: now)
            if !late.isEmpty {
                counters.lateAnswers += UInt64(late.count)
                outputs += commit(late.map { .note($0) }, awaiting: .publishOnly, now: now)
            }
        case .answered(let batch, let late):
            outputs.append(.failpoint(.afterCommit))
            pend(batch, outcomes: result.outcomes[...], now: now)
            outputs += [.publish(result.events), .failpoint(.published)]
            // On the ledger, not yet on its disk: the journal keeps them until a synced commit.
            journalTrimDue = true
            if !result.events.isEmpty { journalAheadOfSync = true }
            if !late.isEmpty {
                counters.lateAnswers += UInt64(late.count)
                outputs += commit(late.map { .note($0) }, awaiting: .publishOnly, now: now)
            }
        case .journal:
            preconditionFailure("a commit outcome while a journal write is awaited")
        case .settle(let settlements):
            outputs.append(.failpoint(.confirmationCommitted))
            count(settlements, outcomes: result.outcomes)
            pending.settled(settlements)
            outputs.append(.publish(result.events))
        case .command(let ticket, let command):
            let seq = result.events.first?.seq ?? 0
            switch command {
            case .inhibit(let on):
                outputs += [.publish(result.events), .reply(ticket, .inhibited(on: on, seq: seq))]
            case .collect:
                outputs.append(.failpoint(.collect))
                let event = result.events.first
                logger.notice("cash box collected", metadata: ["seq": "\(seq)"])
                outputs += [.publish(result.events),
                            .reply(ticket, .collected(seq: seq, credited: event?.collected ?? [], unconfirmed: event?.collectedUnconfirmed ?? []))]
            case .reload(let record):
                // Recorded first: a reload the ledger cannot record does not happen.
                outputs += [.failpoint(.reloadSwap), .swapChain(ticket), .publish(result.events), .reply(ticket, .reloaded(record, seq: seq))]
                currentGeneration = record.generation
                logger.notice("chain reloaded", metadata: ["generation": "\(record.generation)", "fingerprint": "\(record.fingerprint)"])
            case .reloadFailed(let reason):
                outputs += [.publish(result.events), .reply(ticket, .reloadFailed(reason: reason, generation: currentGeneration))]
            case .teachStart(let session):
                teach = session
                logger.notice("teach mode: every coin is returned; readings are samples", metadata: [
                    "currency": "\(session.request.currency)", "code": "\(session.request.code)", "coins": "\(session.request.coins)", "by": "\(session.by)",
                ])
                outputs += [.publish(result.events), .reply(ticket, .teaching(session, seq: seq))]
            case .teachCommit(let staged):
                // Recorded: now put in place (the outcome comes back as `.calibrationInstalled`).
                awaiting = .installing(ticket, seq: seq)
                outputs += [.publish(result.events), .installCalibration(staged)]
            case .teachAbort(let session):
                teach = nil
                logger.notice("teach mode aborted: nothing written", metadata: ["code": "\(session.request.code)", "samples": "\(session.samples.count)"])
                outputs += [.publish(result.events), .reply(ticket, .teachAborted(session, seq: seq))]
            }
        case .recovery:
            // The decisions answered from the journal went first in this commit.
            var offset = 0
            for batch in journalOwed {
                pend(batch, outcomes: result.outcomes[offset..<offset + batch.items.count], now: now)
                offset += batch.items.count
            }
            if !journalOwed.isEmpty {
                logger.notice("decisions answered from the journal are on the ledger; their accepted coins are asked about",
                              metadata: ["decisions": "\(offset)"])
                journalOwed = []
                journalTrimDue = true
            }
            outputs.append(.publish(result.events))
        case .notes, .publishOnly:
            outputs.append(.publish(result.events))
        case .staging, .installing:
            preconditionFailure("a commit outcome while a calibration step is awaited")
        }
        // The ledger writes again: the mech may take coins again, unless the operator or a link
        // out of service says no.
        if recovered != nil { outputs.append(.setInhibit(mechInhibited)) }
        // Last, after this commit's answers: emptying the journal costs a sync of its own.
        if journalTrimDue, !journalAheadOfSync {
            journalTrimDue = false
            outputs.append(.trimJournal)
        }
        return outputs
    }

    /// Whether the coin `items[index]` is answered "accept": decided so, committed, or found on
    /// the ledger as an accept (decided before a restart).
    private func accepted(_ batch: Batch, _ index: Int, _ result: AppendResult?) -> Bool {
        guard let result else { return false }
        let item = batch.items[index]
        if case .duplicate(_, let wasAccepted, _) = result.outcomes[item.entryIndex] { return wasAccepted }
        return item.decided.verdict.isAccept
    }

    /// The batch's answers in the planned order; accepts only for what is on disk (on the
    /// ledger, or `journalled`).
    private mutating func answerAll(_ batch: Batch, result: AppendResult?, journalled: Bool = false, now: Instant) -> [CoreOutput] {
        var outputs: [CoreOutput] = []
        for answer in batch.plan.order {
            switch batch.owed[answer.index] {
            case .decided(let index):
                let accept = journalled ? batch.items[index].decided.verdict.isAccept : accepted(batch, index, result)
                outputs.append(.answer(deviceSeq: batch.items[index].reading.deviceSeq, accept: accept))
                if accept { counters.accepted += 1 } else { counters.rejected += 1 }
                let readAt = batch.items[index].reading.readAt.nanoseconds
                counters.decisionLatency.record(microseconds: now.nanoseconds > readAt ? (now.nanoseconds - readAt) / 1000 : 0)
            case .repeated(let seq, let original, let previous):
                let accept = original.map { accepted(batch, $0, result) } ?? (previous && (result != nil || batch.items.isEmpty))
                outputs.append(.answer(deviceSeq: seq, accept: accept))
            }
        }
        return outputs
    }

    /// A boot number the current epoch names that an earlier epoch named too: refused as
    /// evidence about the earlier epoch's coins (`EpochBook.askableBoot`), and recorded, since a
    /// mech whose count starts again is one an operator should look at.
    private func repeatedBoot(_ boot: UInt64) -> Occurrence? {
        guard let earlier = epochs.earlierEpoch(naming: boot, before: tracker.epoch) else { return nil }
        logger.error("the mech named a boot number it had named before: coins of the older session still unsettled are no longer asked by it",
                     metadata: ["boot": "\(boot)", "epoch": "\(tracker.epoch)", "earlier_epoch": "\(earlier)"])
        return .mechStatus(source: settings.source, status: "boot_conflict",
                           detail: "boot \(boot) named again in epoch \(tracker.epoch) (it was epoch \(earlier)): the older session's unsettled coins are unconfirmed")
    }

    /// Accepts whose answers reach the mech after its deadline (the commit overran).
    private func lateAnswers(_ batch: Batch, now: Instant) -> [Occurrence] {
        guard let deadline = settings.deadline else { return [] }
        var late: [Occurrence] = []
        var lineFreeAt = now
        for answer in batch.plan.order {
            lineFreeAt = lineFreeAt + answer.transit
            guard case .decided(let index) = batch.owed[answer.index], answer.accept else { continue }
            let item = batch.items[index]
            if let lateBy = deadline.lateBy(sentAt: item.reading.sentAt, arrivesAt: lineFreeAt) {
                logger.error("accept reached the mech after its deadline: the mech returns the coin",
                             metadata: ["devseq": "\(item.reading.deviceSeq)", "epoch": "\(item.epoch)", "late_by_ms": "\(Self.tenths(lateBy.milliseconds))"])
                late.append(.lateAnswer(source: settings.source, epoch: item.epoch, deviceSeq: item.reading.deviceSeq, lateBy: lateBy))
            }
        }
        return late
    }

    /// The commit failed: nothing was recorded.
    private mutating func commitFailed(_ awaited: Awaiting, _ error: LedgerError, now: Instant) -> [CoreOutput] {
        var outputs: [CoreOutput] = []
        var busy: Bool
        if case .busy = error { busy = true } else { busy = false }
        switch awaited {
        case .batch(let batch):
            // The coins are answered "return"; their occurrences wait for the next commit; the
            // settlements too (the coins stay pending and are asked about again).
            outputs += answerAll(batch, result: nil, now: now)
            for item in batch.items where item.decided.verdict.isAccept { answers[item.reading.deviceSeq]?.accept = false }
            carry(batch.occurrences)
        case .command(let ticket, let command):
            switch command {
            case .inhibit(let on):
                outputs.append(.reply(ticket, .unrecorded("the mech is \(on ? "inhibited" : "no longer inhibited"), but the ledger cannot record it")))
            case .collect:
                outputs.append(.reply(ticket, .unrecorded("the ledger cannot write: nothing collected")))
            case .reload(let record):
                logger.error("reload not recorded: the ledger cannot write; generation \(currentGeneration) keeps deciding")
                outputs.append(.reply(ticket, .unrecorded("the ledger cannot record the reload: chain generation \(currentGeneration) keeps deciding (generation \(record.generation) was built)")))
            case .reloadFailed(let reason):
                outputs.append(.reply(ticket, .reloadFailed(reason: reason, generation: currentGeneration)))
            case .teachStart:
                outputs.append(.reply(ticket, .unrecorded("the ledger cannot record it: teach mode not started")))
            case .teachCommit(let staged):
                outputs += [.discardCalibration(staged),
                            .reply(ticket, .unrecorded("the ledger cannot record the calibration: nothing written; still teaching, commit again"))]
            case .teachAbort:
                outputs.append(.reply(ticket, .unrecorded("the ledger cannot record it: still teaching")))
            }
        case .answered(let batch, let late):
            // Answered already, and durable in the journal: kept for the commit that ends the
            // failure (or replayed at the next start). Not a busy ledger's "return this batch":
            // the answers are out, so the ledger is failing until they are on it.
            journalOwed.append(batch)
            carry(late)
            busy = false
        case .journal:
            preconditionFailure("a commit outcome while a journal write is awaited")
        case .settle, .publishOnly:
            break
        case .notes(let occurrences):
            carry(occurrences)
        case .staging, .installing:
            preconditionFailure("a commit outcome while a calibration step is awaited")
        case .recovery(let occurrences):
            carry(occurrences.filter { if case .ledgerRecovered = $0 { return false }; return true })
            logger.error("ledger still cannot write", metadata: ["error": "\(error)"])
            return []
        }
        if busy {
            logger.warning("ledger busy: another process holds it; the batch's coins are returned", metadata: ["error": "\(error)"])
            return outputs
        }
        if ledgerFailingSince == nil {
            ledgerFailingSince = now
            lastRecoveryAttempt = now
            logger.critical("ledger cannot write: returning every coin and inhibiting the mech", metadata: ["error": "\(error)"])
            outputs.append(.setInhibit(true))
        } else {
            logger.error("ledger still cannot write", metadata: ["error": "\(error)"])
        }
        return outputs
    }

    private mutating func carry(_ occurrences: [Occurrence]) {
        carriedOver = Array((carriedOver + occurrences).prefix(1000))
    }

    private mutating func count(_ settlements: [PendingCoins.Settlement], outcomes: [EntryOutcome]) {
        for (settlement, outcome) in zip(settlements, outcomes) {
            guard case .recorded = outcome else { continue }
            switch settlement.resolution {
            case .credited where settlement.late:
                counters.credited += 1
                logger.notice("an unconfirmed coin is credited: the mech's journal says it reached the cash box", metadata: [
                    "epoch": "\(settlement.coin.epoch)", "devseq": "\(settlement.coin.deviceSeq)",
                ])
            case .credited: counters.credited += 1
            case .returned: counters.returnedAfterAccept += 1
            case .unconfirmed:
                counters.unconfirmed += 1
                logger.warning("coin unconfirmed: it is not credit; match it against the cash box", metadata: [
                    "epoch": "\(settlement.coin.epoch)", "devseq": "\(settlement.coin.deviceSeq)", "why": "\(settlement.message)",
                ])
            }
        }
    }

    // MARK: Time passing

    private mutating func tick(now: Instant) -> [CoreOutput] {
        if let since = ledgerFailingSince {
            guard now >= (lastRecoveryAttempt ?? since) + settings.ledgerRetry else { return [] }
            lastRecoveryAttempt = now
            let occurrences = carriedOver + [.ledgerRecovered(failedFor: now - since)]
            carriedOver = []
            let owed = journalOwed.flatMap { $0.items.map { LedgerEntry.decision(record($0), credit: settings.credit) } }
            return commit(owed + occurrences.map { .note($0) }, awaiting: .recovery(occurrences), now: now)
        }
        guard settings.credit == .onConfirmation, connected, !pending.isEmpty || pending.hasLateQueries else { return [] }
        if let since = awaitingSessionSince {
            guard now >= since + settings.sessionWait else { return [] }
            logger.warning("the mech did not name its session; asking about pending coins by the boots on record")
            awaitingSessionSince = nil
            pending.askAllNow(now)
        }
        var outputs: [CoreOutput] = []
        var settlements: [PendingCoins.Settlement] = []
        for coin in pending.due(now: now) {
            guard let boot = epochs.askableBoot(ofEpoch: coin.epoch) else {
                let unaskable = pending.unaskable(epochs: epochs).filter { $0.coin == coin }
                // An unconfirmed coin of an unknown session: not asked this time.
                if unaskable.isEmpty { _ = pending.queried(coin, now: now) }
                settlements += unaskable
                continue
            }
            if let gaveUp = pending.queried(coin, now: now) {
                settlements.append(gaveUp)
            } else {
                counters.queries += 1
                outputs.append(.query(boot: boot, deviceSeq: coin.deviceSeq))
            }
        }
        if !settlements.isEmpty { outputs += settle(settlements) }
        return outputs
    }

    /// What a settlement records: a late credit for an unconfirmed coin, else its resolution.
    static func entry(_ settlement: PendingCoins.Settlement) -> LedgerEntry {
        settlement.late ? .lateCredit(decisionSeq: settlement.coin.seq, message: settlement.message)
            : .resolve(decisionSeq: settlement.coin.seq, settlement.resolution, message: settlement.message)
    }

    /// Records `settlements` on their own (outside a batch of readings).
    private mutating func settle(_ settlements: [PendingCoins.Settlement]) -> [CoreOutput] {
        let entries = settlements.map(Self.entry)
        awaiting = .settle(settlements)
        return [.commit(entries, busyTimeout: settings.busyTimeout)]
    }

    private mutating func commit(_ entries: [LedgerEntry], awaiting awaited: Awaiting, now: Instant) -> [CoreOutput] {
        awaiting = awaited
        return [.commit(entries, busyTimeout: settings.busyTimeout)]
    }

    static let sessionUnknownMessage = "the mech has not named its session since it connected: the coin could be filed under the wrong boot, so it is returned"

    static func tenths(_ value: Double) -> String {
        let tenths = Int64((value * 10).rounded())
        return "\(tenths / 10).\(abs(tenths) % 10)"
    }

    static func plain(_ value: Double) -> String {
        value == value.rounded() ? "\(Int64(value))" : tenths(value)
    }
}

extension Optional {
    /// Returns the value and leaves nil behind.
    fileprivate mutating func take() -> Wrapped? {
        defer { self = nil }
        return self
    }
}
