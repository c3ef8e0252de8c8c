/// The host side of one ccTalk coin acceptor, with no I/O: bytes and the time go in, bytes to
/// write and typed events come out. A driver owns the serial port and the clock (any clock:
/// tests run it on simulated time).
///
/// What it does:
/// - identifies the device (category, manufacturer, product, serial number, revisions,
///   polling priority), reads the coin id of every position and runs a self-check;
/// - enables the positions it is allowed to (`allow`) that hold a coin, and lifts master
///   inhibit unless told to inhibit (`setInhibited`); reads both back every few seconds and
///   puts them right if the device lost them;
/// - polls the credit buffer (229) every 200 ms from the start and never stops, and turns it
///   into ledger batches through `CreditBufferTracker`: every event exactly once, given that
///   the caller stores each batch's counter state with its entries;
/// - retries a request whose reply does not come (idempotent requests only), waits after a
///   BUSY, reports a device that stops answering once per outage and identifies it again when
///   it is back; identifies it again when it restarted;
/// - discards its own bytes when the line echoes them (`CCTalkEchoMode`).
///
/// Only one request is on the line at a time: ccTalk replies carry no request number.
public struct CCTalkHost: Sendable {
    public let configuration: CCTalkHostConfiguration
    /// The device's counter state as the host last read it: the last batch's `after`.
    public private(set) var counterState: CCTalkCounterState?
    /// What the ledger holds, as far as the host knows: the `before` of the next batch.
    public private(set) var recordedState: CCTalkCounterState?
    /// What the device said about itself, once identified.
    public private(set) var identity: CCTalkDeviceIdentity?
    /// Who the ledger last saw at the address (serial number, coin ids): while the device is
    /// identified, buffer reads are recorded against it once the device gives that serial
    /// number, so a host that restarts reads its buffer within a poll or two.
    public private(set) var remembered: CCTalkDeviceIdentity?
    public private(set) var fault = CCTalkFaultCode.ok
    public private(set) var isResponding = true
    /// The inhibit registers as the device last confirmed them.
    public private(set) var enabled: CoinPositionMask?
    public private(set) var accepting: Bool?
    /// Whether the line echoes the host's bytes, once known.
    public private(set) var lineEchoes: Bool?
    /// The ledger could not store the last batch: the acceptor is held in master inhibit (it
    /// has already taken any coin it credits, so it must take none the host cannot record),
    /// and a reset, which would wipe the events the ledger still lacks, waits.
    public private(set) var waitsForLedger = false

    private enum Phase: Sendable { case stopped, identifying, running, refused }

    private enum Job: Sendable, Hashable {
        case ask(CCTalkRequest)
        case applyInhibits
        case applyMaster
        case finishIdentification
        /// A request to another device on the bus, for the driver (`ask`).
        case device(UInt8, CCTalkRequest)
    }

    private struct Transaction: Sendable {
        var job: Job
        var address: UInt8
        var request: CCTalkRequest
        var bytes: [UInt8]
        /// 1 for the first attempt.
        var attempt = 1
        var busy = 0
        var deadline: UInt64
        /// The device said BUSY: at the deadline, ask again.
        var waitingAfterBusy = false
    }

    private var phase = Phase.stopped
    private var parser: CCTalkParser
    private var pending: Transaction?
    private var jobs: [Job] = []
    /// Requests to other devices, in order: they go out between buffer polls, whatever the
    /// acceptor's state.
    private var deviceJobs: [Job] = []
    /// The last transaction begun was the acceptor's: another device's request may go next.
    private var deviceTurn = false
    private var draft: CCTalkDeviceIdentity
    private var allowed: CoinPositionMask
    private var inhibited = false
    private var stats = CCTalkHostStatistics()
    private var nextPollAt: UInt64 = 0
    /// Nothing is sent before this: a reply to a request of a previous process may still come.
    private var quietUntil: UInt64 = 0
    private var nextVerifyAt: UInt64 = 0
    private var nextFaultCheckAt: UInt64?
    private var failuresInARow = 0
    /// No buffer has been read since the last identification finished.
    private var freshlyIdentified = false
    private var lastSent: [UInt8] = []
    /// Entries of batches the ledger could not store, oldest first: they go out again with
    /// the next batch.
    private var unrecorded: [CCTalkLedgerEntry] = []
    /// A batch went out and the driver has not said it failed (`notRecorded`) yet.
    private var awaitingVerdict = false
    /// Where a reset the driver asked for stands.
    private enum ResetStage: Sendable {
        case none
        /// The acceptor is held inhibited until the reset is safe.
        case requested
        /// A batch with `expectsRestart` went out; the reset follows once it is stored.
        case announced
        /// The reset went out; `expectsRestart` is cleared by the restart, or by a buffer that
        /// shows none happened.
        case sent
    }

    private var resetStage = ResetStage.none
    /// The buffer was read and recorded since the device confirmed master inhibit.
    private var bufferReadSinceInhibit = false
    /// The ledger holds a counter state for the device: the one it started with, or the first
    /// batch this host recorded. Until then the acceptor takes no coin, since the next host
    /// would find any coin taken meanwhile in a buffer it cannot tell from older ones (backlog).
    private var baselineStored: Bool

    /// `persisted`: the counter state the ledger holds for this device (nil if it never met it).
    /// `remembered`: the device the ledger last identified at this address, if any.
    public init(configuration: CCTalkHostConfiguration = CCTalkHostConfiguration(), persisted: CCTalkCounterState?,
                remembered: CCTalkDeviceIdentity? = nil) {
        self.configuration = configuration
        self.remembered = remembered
        counterState = persisted
        recordedState = persisted
        baselineStored = persisted != nil
        allowed = configuration.allowed
        creditableCoinIDs = configuration.creditableCoinIDs
        draft = CCTalkDeviceIdentity(address: configuration.address)
        parser = CCTalkParser(checksum: configuration.checksum,
                              destinations: Set([configuration.hostAddress, configuration.address]).union(configuration.otherAddresses),
                              interByteTimeout: configuration.interByteTimeout)
        if configuration.echo == .off { lineEchoes = false }
    }

    /// Counts since the start, the line's included.
    public var statistics: CCTalkHostStatistics {
        var counts = stats
        counts.line = parser.counts
        return counts
    }

    /// Identified and polling.
    public var isRunning: Bool { phase == .running }

    /// When the host next has something to do if no byte arrives (CLOCK_MONOTONIC ns, or the
    /// driver's clock).
    public var nextWake: UInt64? {
        var due: UInt64
        switch phase {
        case .stopped: return nil
        case .refused: due = deviceJobs.isEmpty ? nextVerifyAt : max(quietUntil, pending?.deadline ?? 0)
        case .identifying, .running:
            // Work that can go out goes as soon as the line may be used (a reset step as soon as
            // the driver's next call has settled the last batch: coins that keep coming must not
            // starve it); otherwise the next poll.
            let work = !deviceJobs.isEmpty || isResponding && (!jobs.isEmpty || (resetStage == .requested && resetWillBeSafe)
                || (resetStage == .announced && ledgerWillBeCurrent))
            due = pending?.deadline ?? (work ? quietUntil : max(nextPollAt, quietUntil))
        }
        if let expiry = parser.expiresAt { due = min(due, expiry) }
        return due
    }

    // MARK: Driving

    /// Starts: identify the device, then poll.
    public mutating func start(now: UInt64) -> [CCTalkHostOutput] {
        guard phase == .stopped else { return [] }
        restartIdentification()
        // A daemon that died with a request on the line may have a reply still coming: let it
        // pass before the first request, so it is not taken for the answer to ours.
        quietUntil = now &+ configuration.replyTimeout
        nextPollAt = quietUntil
        return service(now)
    }

    /// Time passed: retries, polls, checks.
    public mutating func tick(now: UInt64) -> [CCTalkHostOutput] {
        settleVerdict()
        return service(now)
    }

    /// Bytes read from the line at `now`.
    public mutating func received(_ bytes: some Sequence<UInt8>, at now: UInt64) -> [CCTalkHostOutput] {
        settleVerdict()
        var out: [CCTalkHostOutput] = []
        let echoed = parser.counts.echoBytes
        var events: [CCTalkParser.Event] = []
        parser.feed(bytes, at: now) { events.append($0) }
        if parser.counts.echoBytes > echoed, configuration.echo == .auto { lineEchoes = true }
        for event in events { handle(event, now: now, &out) }
        return out + service(now)
    }

    /// Enables these positions (those that hold a coin): what the chain and the operator allow.
    /// `creditable`: the coin ids the chain will credit; a position whose coin id is not among
    /// them stays closed, so the acceptor returns its coins instead of keeping them uncredited.
    public mutating func allow(_ positions: CoinPositionMask, creditable: Set<String>? = nil, now: UInt64) -> [CCTalkHostOutput] {
        settleVerdict()
        allowed = positions
        creditableCoinIDs = creditable
        if phase == .running { queue(.applyInhibits) }
        return service(now)
    }

    /// Master inhibit on (the acceptor returns every coin) or off.
    public mutating func setInhibited(_ on: Bool, now: UInt64) -> [CCTalkHostOutput] {
        settleVerdict()
        inhibited = on
        if phase == .running { queue(.applyMaster) }
        return service(now)
    }

    /// Sends `request` to another device on the bus (a payout hopper at `address`), after the
    /// requests asked before it; the answer comes back as a `deviceAnswer` event. It shares
    /// the line with the acceptor: the buffer poll keeps its interval.
    public mutating func ask(_ request: CCTalkRequest, at address: UInt8, now: UInt64) -> [CCTalkHostOutput] {
        settleVerdict()
        deviceJobs.append(.device(address, request))
        return service(now)
    }

    /// Asks the device to reset (header 1); it comes back with its counter at 0, and the host
    /// sets it up again. A reset wipes the buffer, so the host first inhibits the acceptor
    /// and reads the buffer once more, and sends the reset only when the ledger has it all.
    public mutating func resetDevice(now: UInt64) -> [CCTalkHostOutput] {
        settleVerdict()
        if resetStage == .none {
            resetStage = .requested
            queue(.applyMaster, first: true)
        }
        return service(now)
    }

    /// The ledger has every batch so far.
    private var ledgerIsCurrent: Bool { ledgerWillBeCurrent && !awaitingVerdict }

    /// The ledger has every batch so far, unless the last one (just handed out) fails: the
    /// driver's next call says.
    private var ledgerWillBeCurrent: Bool { !waitsForLedger && unrecorded.isEmpty && recordedState == counterState }

    /// The reset may be announced: the device is identified and inhibited (it takes no
    /// coin), a buffer read since it was inhibited is recorded, and the ledger has everything.
    private var resetIsSafe: Bool { resetWillBeSafe && ledgerIsCurrent }

    private var resetWillBeSafe: Bool {
        phase == .running && accepting == false && bufferReadSinceInhibit && ledgerWillBeCurrent && counterState != nil
    }

    /// The ledger could not store `batch` (the last one yielded): its entries go out again,
    /// with whatever is new, in the next batch (at the next poll, even if nothing is new).
    /// What the host saw is kept, so a restart of the device it saw is not forgotten.
    public mutating func notRecorded(_ batch: CCTalkLedgerBatch) {
        awaitingVerdict = false
        recordedState = batch.before
        unrecorded = batch.entries
        if !waitsForLedger {
            waitsForLedger = true
            queue(.applyMaster, first: true)
        }
    }

    /// The driver called back in without `notRecorded`: the last batch is stored.
    private mutating func settleVerdict() {
        guard awaitingVerdict else { return }
        awaitingVerdict = false
        if !baselineStored, recordedState != nil {
            baselineStored = true
            queue(.applyMaster)
        }
        if waitsForLedger {
            waitsForLedger = false
            queue(.applyMaster)
        }
    }

    /// The ledger holds another state than the host thought (another writer, or it restored a
    /// backup): go on from what it holds. The next poll reads the buffer against it.
    public mutating func rewind(to state: CCTalkCounterState?) {
        counterState = state
        recordedState = state
        unrecorded = []
        if (state != nil) != baselineStored {
            baselineStored = state != nil
            queue(.applyMaster)
        }
    }

    // MARK: The schedule

    /// The coin ids the chain credits (nil: every populated position may open).
    private var creditableCoinIDs: Set<String>?
    private var targetEnabled: CoinPositionMask {
        let open = allowed.intersection(draft.populated)
        guard let creditableCoinIDs else { return open }
        return CoinPositionMask(positions: draft.coinIDs.filter { creditableCoinIDs.contains($0.value.text) }.keys).intersection(open)
    }
    /// Master inhibit is lifted only when nothing holds the acceptor: the operator, a ledger
    /// that cannot record or holds no counter yet, a reset under way (this host's, or one a
    /// previous host announced).
    private var targetAccepting: Bool {
        !inhibited && !waitsForLedger && baselineStored && resetStage == .none && counterState?.expectsRestart != true
    }

    private var expectsEcho: Bool {
        switch configuration.echo {
        case .on: true
        case .off: false
        case .auto: lineEchoes != false
        }
    }

    private mutating func service(_ now: UInt64) -> [CCTalkHostOutput] {
        var out: [CCTalkHostOutput] = []
        var events: [CCTalkParser.Event] = []
        parser.expire(now: now) { events.append($0) }
        for event in events { handle(event, now: now, &out) }
        if let transaction = pending, now >= transaction.deadline {
            if transaction.waitingAfterBusy {
                send(transaction, now: now, &out)
            } else {
                stats.timeouts += 1
                retryOrGiveUp(transaction, answered: false, now: now, &out)
            }
        }
        if pending == nil { startNext(now, &out) }
        return out
    }

    private mutating func startNext(_ now: UInt64, _ out: inout [CCTalkHostOutput]) {
        guard now >= quietUntil else { return }
        switch phase {
        case .stopped:
            return
        case .refused:
            // Not a coin acceptor at its address: the hoppers are still served meanwhile.
            guard now >= nextVerifyAt else {
                if !deviceJobs.isEmpty { beginDeviceJob(now, &out) }
                return
            }
            restartIdentification()
        case .identifying, .running:
            break
        }
        // Other devices (payout hoppers) take turns with the acceptor's own transactions, polls
        // included: a silent acceptor whose polls are retried must not starve a hopper that is
        // paying, and hoppers must not hold up the acceptor's master inhibit and identification,
        // or coins it takes meanwhile push unrecorded events out of its five-deep buffer.
        let deviceWaiting = !deviceJobs.isEmpty && phase != .stopped
        if deviceWaiting, deviceTurn { return beginDeviceJob(now, &out) }
        if now >= nextPollAt {
            // The buffer poll comes first, every interval, whatever else is going on.
            nextPollAt = nextPollAt &+ configuration.pollInterval
            if nextPollAt <= now { nextPollAt = now &+ configuration.pollInterval }
            stats.polls += 1
            begin(.ask(.readBufferedCredit), .readBufferedCredit, now: now, &out)
            return
        }
        if deviceWaiting, !(isResponding && (!jobs.isEmpty || resetStage != .none)) { return beginDeviceJob(now, &out) }
        guard isResponding else { return }  // only polls while the device is away
        if resetStage == .requested, resetIsSafe, var announced = counterState {
            // Stored before the reset goes out: a host restarted meanwhile still knows.
            announced.expectsRestart = true
            out.append(.event(.batch(CCTalkLedgerBatch(before: recordedState, after: announced, entries: []))))
            counterState = announced
            recordedState = announced
            awaitingVerdict = true
            resetStage = .announced
            return
        }
        if resetStage == .announced, ledgerIsCurrent {
            resetStage = .sent
            begin(.ask(.reset), .reset, now: now, &out)
            return
        }
        if phase == .running {
            if now >= nextVerifyAt, jobs.isEmpty {
                jobs += [.ask(.readMasterInhibit), .ask(.readInhibits)]
                nextVerifyAt = now &+ configuration.verifyInterval
            }
            if let due = nextFaultCheckAt, now >= due {
                queue(.ask(.selfCheck))
                nextFaultCheckAt = now &+ configuration.faultCheckInterval
            }
        }
        while !jobs.isEmpty {
            let job = jobs.removeFirst()
            switch job {
            case .finishIdentification:
                identity = draft
                phase = .running
                freshlyIdentified = true
                nextVerifyAt = now &+ configuration.verifyInterval
                out.append(.event(.identified(draft)))
                continue
            case .ask(let request):
                begin(job, request, now: now, &out)
            case .applyInhibits:
                begin(job, .setInhibits(enabled: targetEnabled), now: now, &out)
            case .applyMaster:
                begin(job, .setMasterInhibit(accepting: targetAccepting), now: now, &out)
            case .device(let address, let request):
                begin(job, request, to: address, now: now, &out)
            }
            return
        }
    }

    private static func identificationJobs() -> [Job] {
        // Master inhibit first: buffer reads are not recorded until the device is known, and
        // polls keep the acceptor from inhibiting itself, so an acceptor a dead host left
        // accepting would otherwise go on taking coins nobody records while it is identified,
        // and push into its five-deep buffer events a host that died before recording them
        // (kill -9) still owes. The end of identification lifts it.
        // The serial number next: with it, a device the host remembers has its buffer recorded
        // while the rest is asked.
        var jobs: [Job] = [.ask(.setMasterInhibit(accepting: false)), .ask(.serialNumber)]
        jobs += [.simplePoll, .equipmentCategory, .manufacturer, .productCode, .softwareRevision,
                 .commsRevision, .pollingPriority].map { .ask($0) } as [Job]
        jobs += CoinPositionMask.positions.map { .ask(.coinID(position: $0)) }
        jobs += [.ask(.selfCheck), .applyInhibits, .applyMaster, .finishIdentification]
        return jobs
    }

    /// Queues `job` unless it already waits (`first`: ahead of the others).
    private mutating func queue(_ job: Job, first: Bool = false) {
        guard !jobs.contains(job) else { return }
        if first { jobs.insert(job, at: 0) } else { jobs.append(job) }
    }

    private mutating func restartIdentification() {
        phase = .identifying
        draft = CCTalkDeviceIdentity(address: configuration.address)
        jobs = Self.identificationJobs()
    }

    // MARK: Transactions

    private mutating func beginDeviceJob(_ now: UInt64, _ out: inout [CCTalkHostOutput]) {
        let job = deviceJobs.removeFirst()
        if case .device(let address, let request) = job { begin(job, request, to: address, now: now, &out) }
    }

    private mutating func begin(_ job: Job, _ request: CCTalkRequest, to address: UInt8? = nil, now: UInt64, _ out: inout [CCTalkHostOutput]) {
        if case .device = job { deviceTurn = false } else { deviceTurn = true }
        let address = address ?? configuration.address
        let bytes = request.frame(to: address, from: configuration.hostAddress).encoded(configuration.checksum)
        send(Transaction(job: job, address: address, request: request, bytes: bytes, deadline: 0), now: now, &out)
    }

    private mutating func send(_ transaction: Transaction, now: UInt64, _ out: inout [CCTalkHostOutput]) {
        var transaction = transaction
        transaction.waitingAfterBusy = false
        transaction.deadline = now &+ configuration.transit(bytes: transaction.bytes.count) &+ configuration.replyTimeout
        pending = transaction
        lastSent = transaction.bytes
        if expectsEcho { parser.expectEcho(transaction.bytes, at: now) }
        stats.requests += 1
        out.append(.send(transaction.bytes))
    }

    private mutating func retryOrGiveUp(_ transaction: Transaction, answered: Bool, now: UInt64, _ out: inout [CCTalkHostOutput]) {
        if transaction.attempt <= configuration.retries, transaction.request.isIdempotent {
            var again = transaction
            again.attempt += 1
            stats.retries += 1
            send(again, now: now, &out)
            return
        }
        pending = nil
        stats.failures += 1
        if case .device(let address, let request) = transaction.job {
            // Another device's silence says nothing of the acceptor's.
            if !answered { out.append(.event(.deviceAnswer(address: address, request, nil))) }
            return
        }
        switch transaction.job {
        case .applyInhibits, .applyMaster:
            queue(transaction.job, first: true)  // must happen: try again later
        default:
            break
        }
        guard !answered else { return }
        // An identification query that got no answer is left out (the device may not know it);
        // a device that stops answering altogether is identified again when it is back.
        failuresInARow += 1
        if failuresInARow >= configuration.unresponsiveAfter, isResponding {
            isResponding = false
            out.append(.event(.notResponding(transaction.request, failures: failuresInARow)))
        }
    }

    // MARK: What came in

    private mutating func handle(_ event: CCTalkParser.Event, now: UInt64, _ out: inout [CCTalkHostOutput]) {
        switch event {
        case .error(.echoMissing) where configuration.echo == .auto:
            lineEchoes = false  // learnt: this line does not echo
        case .error(let error):
            out.append(.event(.lineError(error)))
        case .frame(let frame):
            handle(frame, now: now, &out)
        }
    }

    private mutating func handle(_ frame: CCTalkFrame, now: UInt64, _ out: inout [CCTalkHostOutput]) {
        guard frame.destination == configuration.hostAddress else {
            if frame.encoded(configuration.checksum) == lastSent {
                // Our own request, read back on a single-wire line we did not expect to echo.
                if configuration.echo == .auto { lineEchoes = true }
            } else {
                stats.unexpectedFrames += 1
            }
            return
        }
        guard var transaction = pending, frame.source == nil || frame.source == transaction.address else {
            stats.unexpectedFrames += 1
            return
        }
        let answer: CCTalkAnswer
        do throws(CCTalkReplyError) {
            answer = try transaction.request.answer(frame)
        } catch {
            // Most likely the late answer to an earlier request: ignore it. The real answer may
            // still come; if not, the request's deadline asks again.
            stats.malformedReplies += 1
            out.append(.event(.malformedReply(error)))
            return
        }
        stats.replies += 1
        if case .device(let address, let request) = transaction.job {
            if case .busy = answer, transaction.busy < configuration.busyLimit {
                stats.busies += 1
                transaction.busy += 1
                transaction.waitingAfterBusy = true
                transaction.deadline = now &+ configuration.busyDelay
                pending = transaction
                return
            }
            pending = nil
            if transaction.attempt > 1 { quietUntil = now &+ configuration.replyTimeout }
            out.append(.event(.deviceAnswer(address: address, request, answer)))
            return
        }
        failuresInARow = 0
        if !isResponding {
            isResponding = true
            out.append(.event(.responding))
            // It may have been swapped or restarted meanwhile: find out who it is first.
            restartIdentification()
        }
        switch answer {
        case .busy:
            stats.busies += 1
            transaction.busy += 1
            if transaction.busy > configuration.busyLimit {
                out.append(.event(.refused(transaction.request, .busy)))
                retryOrGiveUp(transaction, answered: true, now: now, &out)
            } else {
                transaction.waitingAfterBusy = true
                transaction.deadline = now &+ configuration.busyDelay
                pending = transaction
            }
        case .nak:
            stats.naks += 1
            out.append(.event(.refused(transaction.request, .nak)))
            if transaction.request == .readBufferedCredit {
                retryOrGiveUp(transaction, answered: true, now: now, &out)
            } else {
                pending = nil  // not supported, or not now: go on without it
            }
        case .reply(let reply):
            pending = nil
            if transaction.attempt > 1 {
                // The reply to an earlier attempt may still be on its way: let it pass, so it
                // is not taken for the answer to the next request.
                quietUntil = now &+ configuration.replyTimeout
            }
            apply(reply, to: transaction, now: now, &out)
        }
    }

    private mutating func apply(_ reply: CCTalkReply, to transaction: Transaction, now: UInt64, _ out: inout [CCTalkHostOutput]) {
        switch (transaction.request, reply) {
        case (.equipmentCategory, .text(let text)):
            draft.category = text
            if !draft.isCoinAcceptor {
                phase = .refused
                jobs = []
                nextVerifyAt = now &+ configuration.verifyInterval
                out.append(.event(.notACoinAcceptor(category: text)))
            }
        case (.manufacturer, .text(let text)): draft.manufacturer = text
        case (.productCode, .text(let text)): draft.productCode = text
        case (.softwareRevision, .text(let text)): draft.softwareRevision = text
        case (.serialNumber, .serialNumber(let number)):
            draft.serialNumber = number
            // The device the ledger knows: its buffer is recorded from now on, so it is read at
            // once, not at the next interval. Events a dead host read and did not record are
            // in it, and coins the master inhibit returns push them out of its five slots.
            if phase == .identifying, (identity ?? remembered)?.serialNumber == number { nextPollAt = now }
        case (.commsRevision, .commsRevision(let release, let major, let minor)): draft.commsRevision = [release, major, minor]
        case (.pollingPriority, .pollingPriority(let priority)): draft.pollingPriority = priority
        case (.coinID(let position), .coinID(let id)): draft.coinIDs[position] = id.isEmpty ? nil : id
        case (.selfCheck, .selfCheck(let code, let extra)):
            if code != fault {
                out.append(.event(code.isFault ? .fault(code, extra: extra) : .faultCleared))
            }
            fault = code
            nextFaultCheckAt = code.isFault ? now &+ configuration.faultCheckInterval : nil
        case (.setInhibits(let mask), .ack):
            enabled = mask
            if let accepting, !jobs.contains(.applyMaster) { out.append(.event(.configured(enabled: mask, accepting: accepting))) }
        case (.setMasterInhibit(let accepting), .ack):
            self.accepting = accepting
            if !accepting { bufferReadSinceInhibit = false }
            out.append(.event(.configured(enabled: enabled ?? .none, accepting: accepting)))
        case (.reset, _):
            // The device restarts: its registers are gone.
            accepting = nil
            enabled = nil
        case (.readInhibits, .inhibits(let mask)):
            if phase == .running, mask != targetEnabled, !jobs.contains(.applyInhibits) {
                stats.reapplied += 1
                jobs.append(.applyInhibits)
            }
        case (.readMasterInhibit, .masterInhibit(let accepting)):
            if accepting != self.accepting {
                self.accepting = accepting
                if !accepting { bufferReadSinceInhibit = false }
            }
            if phase == .running, accepting != targetAccepting, !jobs.contains(.applyMaster) {
                stats.reapplied += 1
                jobs.append(.applyMaster)
            }
        case (.readBufferedCredit, .creditBuffer(let buffer)):
            record(buffer, &out)
        default:
            break  // ACKs of a poll or a reset, opto states
        }
    }

    /// Who the buffer's events are recorded against: the identified device, or while it is
    /// identified, the one it was before (or the ledger remembers) once it gives the same serial
    /// number. Nil: not yet.
    private var recordingIdentity: CCTalkDeviceIdentity? {
        switch phase {
        case .running:
            return identity
        case .identifying:
            guard let known = identity ?? remembered, let serial = draft.serialNumber, serial == known.serialNumber else { return nil }
            return known
        case .stopped, .refused:
            return nil
        }
    }

    /// Turns a buffer into a ledger batch once the device is known.
    private mutating func record(_ buffer: CreditBuffer, _ out: inout [CCTalkHostOutput]) {
        guard let identity = recordingIdentity else { return }  // it waits in the device meanwhile
        if accepting == false { bufferReadSinceInhibit = true }
        let wasFresh = freshlyIdentified
        freshlyIdentified = false
        // A reset this host sent: it sees the restart itself (counter 0, or the buffer's
        // evidence), so the stored expectation is only for a host that restarts meanwhile.
        // A host that inherited the expectation resolves it with this read, then lets the
        // acceptor take coins again.
        var basis = counterState
        let ownReset = resetStage == .sent
        let inherited = resetStage == .none && counterState?.expectsRestart == true
        if resetStage != .none { basis?.expectsRestart = false }
        guard var advance = CreditBufferTracker.advance(basis, buffer: buffer, serialNumber: identity.serialNumber) else {
            if ownReset || inherited, var cleared = counterState {
                // Nothing moved: no reset happened (or none is coming). Clear the expectation.
                cleared.expectsRestart = false
                counterState = cleared
                resetStage = .none
                queue(.applyMaster)
            }
            if recordedState != counterState || !unrecorded.isEmpty, let counterState {
                // Nothing new, but the ledger still lacks the last batch: offer it again.
                out.append(.event(.batch(CCTalkLedgerBatch(before: recordedState, after: counterState, entries: unrecorded))))
                recordedState = counterState
                unrecorded = []
                awaitingVerdict = true
            }
            return
        }
        if ownReset || inherited {
            resetStage = .none
            advance.state.expectsRestart = false
            if !advance.restarted { queue(.applyMaster) }
        } else if resetStage == .announced {
            advance.state.expectsRestart = true  // still to go out: keep it announced
        }
        var stopsAcceptance = false
        let entries = advance.entries.map { entry -> CCTalkLedgerEntry in
            switch entry {
            case .credit(var event):
                stats.credits += 1
                event.coinID = identity.coinIDs[Int(event.result.a)]
                return .credit(event)
            case .backlog(var event):
                stats.backlogEvents += 1
                if (1...16).contains(event.result.a) { event.coinID = identity.coinIDs[Int(event.result.a)] }
                return .backlog(event)
            case .error(_, let error):
                stats.errorEvents += 1
                stopsAcceptance = stopsAcceptance || error.stopsAcceptance
                return entry
            case .lost(_, let numbers):
                stats.lostEvents += numbers.count
                return entry
            case .restarted:
                stats.restarts += 1
                return entry
            case .invalid:
                stats.errorEvents += 1
                return entry
            }
        }
        let batch = CCTalkLedgerBatch(before: recordedState, after: advance.state, entries: unrecorded + entries)
        counterState = advance.state
        recordedState = advance.state
        unrecorded = []
        awaitingVerdict = true
        out.append(.event(.batch(batch)))
        if stopsAcceptance { queue(.ask(.selfCheck)) }
        if advance.restarted {
            if wasFresh {
                // Identified just now: set it up again in case it restarted after that.
                jobs += [.applyInhibits, .applyMaster]
            } else {
                restartIdentification()
            }
        }
    }
}
