/// The host side of one MDB coin changer behind an adapter, with no I/O: the adapter's bytes
/// and the time go in, lines to write and typed events come out. A driver owns the serial port
/// and the clock (any clock: tests run it on simulated time).
///
/// What it does, in the order MDB hosts in the field use:
/// - master mode (`M,1`), the adapter's response timeout, RESET, then POLLs until the changer
///   says it was reset;
/// - SETUP; at level 3 IDENTIFICATION and FEATURE ENABLE (what it wants and the changer offers);
///   TUBE STATUS; COIN TYPE with the types it is allowed to take (`setAccepting`);
/// - then POLLs every `pollIntervalNanoseconds`, TUBE STATUS every
///   `tubeStatusIntervalNanoseconds`, COIN TYPE again whenever what it may take changes;
/// - a changer that reports it was reset is set up again (a reset disables every coin type);
///   one that stops answering is reported once and set up again from the start.
///
/// One line is on the wire at a time: the adapter answers each in order.
public struct MDBChangerHost: Sendable {
    public let configuration: MDBChangerHostConfiguration
    /// What the changer said of itself, once set up.
    public private(set) var setup: MDBChangerSetup?
    public private(set) var identity: MDBChangerIdentity?
    public private(set) var tubes: MDBTubeStatus?
    /// The coin types the changer last acknowledged taking.
    public private(set) var accepting: UInt16?
    public private(set) var isResponding = true

    /// Where the setup stands.
    private enum Phase: Sendable, Hashable {
        case masterMode, responseTimeout, reset
        /// After RESET, nothing is sent until then.
        case settling(until: UInt64)
        /// POLLs until "changer was reset", this many more at most.
        case awaitingReset(pollsLeft: Int)
        case setup, identification, featureEnable, tubeStatus, coinType
        case running
        /// Not answering: set up again from the start at that time.
        case away(until: UInt64)
    }

    private var phase = Phase.masterMode
    private var parser = MDBAdapterLineParser()
    /// The line on the wire and when it was written.
    private var inFlight: (command: MDBAdapterCommand, sentAt: UInt64)?
    private var failures = 0
    /// The coin types the host may let the changer take; nil until told.
    private var allowed: UInt16 = 0
    private var inhibited = false
    private var nextPoll: UInt64 = 0
    private var nextTubeStatus: UInt64 = 0
    private var started = false

    public init(configuration: MDBChangerHostConfiguration = MDBChangerHostConfiguration()) {
        self.configuration = configuration
    }

    /// Whether the changer is set up and polled.
    public var isRunning: Bool { phase == .running }

    /// The coin types the changer should take: those allowed, with a value, unless inhibited.
    public var wanted: UInt16 {
        guard !inhibited, let setup else { return 0 }
        var mask: UInt16 = 0
        for type in 0..<16 where allowed & (1 << type) != 0 && setup.valueMinor(ofType: type) != nil { mask |= 1 << type }
        return mask
    }

    /// When the host next has something to do if no byte arrives.
    public var nextWake: UInt64? {
        guard started else { return nil }
        if let inFlight { return inFlight.sentAt &+ configuration.replyTimeoutNanoseconds }
        switch phase {
        case .settling(let until), .away(let until): return until
        case .awaitingReset, .running: return nextPoll
        default: return nil
        }
    }

    public mutating func start(now: UInt64) -> [MDBChangerHostOutput] {
        started = true
        phase = .masterMode
        var outputs: [MDBChangerHostOutput] = []
        sendNext(now: now, &outputs)
        return outputs
    }

    /// The coin types the chain and the operator let the changer take (bit n: type n).
    public mutating func setAllowed(_ types: UInt16, now: UInt64) -> [MDBChangerHostOutput] {
        allowed = types
        return resendCoinTypeIfIdle(now: now)
    }

    /// Inhibit on (the changer takes no coin: COIN TYPE 0) or off.
    public mutating func setInhibited(_ on: Bool, now: UInt64) -> [MDBChangerHostOutput] {
        inhibited = on
        return resendCoinTypeIfIdle(now: now)
    }

    /// Time passed: a line unanswered, a POLL due, the settle or the outage over.
    public mutating func tick(now: UInt64) -> [MDBChangerHostOutput] {
        var outputs: [MDBChangerHostOutput] = []
        if let inFlight {
            guard now &- inFlight.sentAt >= configuration.replyTimeoutNanoseconds else { return outputs }
            unanswered(now: now, &outputs)
            return outputs
        }
        sendNext(now: now, &outputs)
        return outputs
    }

    /// Bytes read from the adapter at `now`.
    public mutating func received(_ bytes: some Sequence<UInt8>, at now: UInt64) -> [MDBChangerHostOutput] {
        var outputs: [MDBChangerHostOutput] = []
        var replies: [MDBAdapterReply] = []
        parser.feed(bytes) { event in
            switch event {
            case .reply(let reply): replies.append(reply)
            case .error(let error): outputs.append(.event(.adapterError(error)))
            }
        }
        for reply in replies {
            guard let command = inFlight?.command else { continue }  // a reply to nothing: late, dropped
            inFlight = nil
            handle(reply, to: command, now: now, &outputs)
            if inFlight == nil { sendNext(now: now, &outputs) }
        }
        return outputs
    }

    // MARK: The sequence

    /// Sends what the phase calls for, if it is time.
    private mutating func sendNext(now: UInt64, _ outputs: inout [MDBChangerHostOutput]) {
        guard started, inFlight == nil else { return }
        switch phase {
        case .masterMode: send(.masterMode(true), now: now, &outputs)
        case .responseTimeout: send(.responseTimeout(milliseconds: configuration.responseTimeoutMilliseconds), now: now, &outputs)
        case .reset: changer(.reset, now: now, &outputs)
        case .settling(let until):
            guard now >= until else { return }
            phase = .awaitingReset(pollsLeft: configuration.justResetPolls)
            nextPoll = now
            sendNext(now: now, &outputs)
        case .awaitingReset:
            guard now >= nextPoll else { return }
            changer(.poll, now: now, &outputs)
        case .setup: changer(.setup, now: now, &outputs)
        case .identification: changer(.identification, now: now, &outputs)
        case .featureEnable:
            let offered = identity?.features ?? []
            changer(.featureEnable(configuration.features.intersection(offered).rawValue), now: now, &outputs)
        case .tubeStatus: changer(.tubeStatus, now: now, &outputs)
        case .coinType: changer(.coinType(accept: wanted, manualDispense: configuration.manualDispense), now: now, &outputs)
        case .running:
            if accepting != wanted {
                changer(.coinType(accept: wanted, manualDispense: configuration.manualDispense), now: now, &outputs)
            } else if now >= nextTubeStatus {
                changer(.tubeStatus, now: now, &outputs)
            } else if now >= nextPoll {
                changer(.poll, now: now, &outputs)
            }
        case .away(let until):
            guard now >= until else { return }
            phase = .masterMode
            sendNext(now: now, &outputs)
        }
    }

    private mutating func handle(_ reply: MDBAdapterReply, to command: MDBAdapterCommand, now: UInt64, _ outputs: inout [MDBChangerHostOutput]) {
        // The adapter said nobody answered: as if no reply came.
        if case .peripheral(.noAnswer) = reply { return unanswered(now: now, &outputs) }
        if !isResponding {
            isResponding = true
            outputs.append(.event(.responding))
        }
        failures = 0
        switch (phase, reply) {
        case (.masterMode, .masterMode(true)):
            phase = .responseTimeout
        case (.responseTimeout, .configuration):
            phase = .reset  // an adapter that does not take the setting keeps its own
        case (.reset, .peripheral(.ack)):
            phase = .settling(until: now &+ configuration.resetSettleNanoseconds)
        case (.awaitingReset(let left), .peripheral(let answer)):
            let events = pollEvents(answer, &outputs)
            if events.contains(.status(.changerWasReset)) || left <= 1 {
                phase = .setup
            } else {
                phase = .awaitingReset(pollsLeft: left - 1)
                nextPoll = now &+ configuration.pollIntervalNanoseconds
            }
        case (.setup, .peripheral(.data(let bytes))):
            do throws(MDBReplyError) {
                let setup = try MDBChangerSetup(reply: bytes)
                self.setup = setup
                phase = setup.level >= 3 ? .identification : .tubeStatus
            } catch {
                outputs.append(.event(.replyError(error)))
                unanswered(now: now, &outputs)
            }
        case (.identification, .peripheral(.data(let bytes))):
            identity = try? MDBChangerIdentity(reply: bytes)
            phase = identity?.features.intersection(configuration.features).isEmpty == false ? .featureEnable : .tubeStatus
        case (.identification, .peripheral(.ack)):
            phase = .tubeStatus  // a level-3 changer with nothing to say: no features
        case (.featureEnable, .peripheral):
            phase = .tubeStatus
        case (.tubeStatus, .peripheral(.data(let bytes))):
            readTubes(bytes, now: now, &outputs)
            phase = .coinType
        case (.coinType, .peripheral(.ack)):
            coinTypeTaken(command, &outputs)
            if let setup {
                phase = .running
                nextPoll = now
                outputs.append(.event(.ready(setup, identity, tubes)))
            }
        case (.running, .peripheral(.data(let bytes))) where Self.code(command) == MDBChangerCommand.tubeStatusCode:
            readTubes(bytes, now: now, &outputs)
            if let tubes { outputs.append(.event(.tubes(tubes))) }
        case (.running, .peripheral(.ack)) where Self.code(command) == MDBChangerCommand.coinTypeCode:
            coinTypeTaken(command, &outputs)
        case (.running, .peripheral(let answer)) where Self.code(command) == MDBChangerCommand.pollCode:
            nextPoll = now &+ configuration.pollIntervalNanoseconds
            if pollEvents(answer, &outputs).contains(.status(.changerWasReset)) {
                // A reset disables every coin type: set it up again.
                accepting = nil
                phase = .setup
            }
        default:
            // A reply the step did not ask for (a NACK to master mode, data where an ACK was
            // due): as if unanswered, so the step is tried again.
            unanswered(now: now, &outputs)
        }
    }

    /// The events of a POLL reply, reported; the ones a caller acts on returned.
    private mutating func pollEvents(_ answer: MDBAdapterReply.Answer, _ outputs: inout [MDBChangerHostOutput]) -> [MDBChangerEvent] {
        guard case .data(let bytes) = answer else { return [] }
        let events: [MDBChangerEvent]
        do throws(MDBReplyError) {
            events = try MDBChangerEvent.parse(poll: bytes)
        } catch {
            outputs.append(.event(.replyError(error)))
            return []
        }
        for event in events {
            switch event {
            case .deposited(let type, let routing, let count):
                outputs.append(.event(.deposited(type: type, routing: routing, valueMinor: setup?.valueMinor(ofType: type), tubeCount: count)))
            case .dispensedManually(let type, let count, let left):
                outputs.append(.event(.dispensedManually(type: type, count: count, valueMinor: setup?.valueMinor(ofType: type), tubeCount: left)))
            case .slugs(let count): outputs.append(.event(.slugs(count: count)))
            case .status(let status): outputs.append(.event(.status(status)))
            case .unknownStatus(let byte): outputs.append(.event(.unknownStatus(byte)))
            }
        }
        return events
    }

    /// No usable reply: try the step again, and after `failuresBeforeNotResponding` in a row
    /// say so once and start again from master mode after a while.
    private mutating func unanswered(now: UInt64, _ outputs: inout [MDBChangerHostOutput]) {
        inFlight = nil
        failures += 1
        guard failures >= configuration.failuresBeforeNotResponding else {
            nextPoll = now
            sendNext(now: now, &outputs)
            return
        }
        if isResponding {
            isResponding = false
            outputs.append(.event(.notResponding(failures: failures)))
        }
        failures = 0
        accepting = nil
        phase = .away(until: now &+ configuration.reconnectIntervalNanoseconds)
    }

    private mutating func resendCoinTypeIfIdle(now: UInt64) -> [MDBChangerHostOutput] {
        var outputs: [MDBChangerHostOutput] = []
        if phase == .running { sendNext(now: now, &outputs) }
        return outputs
    }

    private mutating func changer(_ command: MDBChangerCommand, now: UInt64, _ outputs: inout [MDBChangerHostOutput]) {
        // Every command this host sends is within the bus's limits.
        guard let transaction = try? command.transaction() else { return }
        send(.transaction(transaction), now: now, &outputs)
    }

    private mutating func send(_ command: MDBAdapterCommand, now: UInt64, _ outputs: inout [MDBChangerHostOutput]) {
        inFlight = (command, now)
        outputs.append(.send(command))
    }

    private mutating func readTubes(_ bytes: [UInt8], now: UInt64, _ outputs: inout [MDBChangerHostOutput]) {
        nextTubeStatus = now &+ configuration.tubeStatusIntervalNanoseconds
        do throws(MDBReplyError) {
            tubes = try MDBTubeStatus(reply: bytes)
        } catch {
            outputs.append(.event(.replyError(error)))
        }
    }

    /// The changer acknowledged a COIN TYPE: it takes what the command asked.
    private mutating func coinTypeTaken(_ command: MDBAdapterCommand, _ outputs: inout [MDBChangerHostOutput]) {
        guard case .transaction(let transaction) = command, transaction.data.count == 4 else { return }
        let mask = UInt16(transaction.data[0]) << 8 | UInt16(transaction.data[1])
        accepting = mask
        outputs.append(.event(.accepting(mask)))
    }

    /// The changer command a line carries (its command byte's low three bits), if any.
    private static func code(_ command: MDBAdapterCommand) -> UInt8? {
        guard case .transaction(let transaction) = command, transaction.address == MDBChangerCommand.address else { return nil }
        return transaction.command & 0x07
    }
}
