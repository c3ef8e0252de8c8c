/// The host side of one MDB coin changer behind an adapter, with no I/O: the adapter's bytes
/// and the time go in, lines to write and typed events come out. A driver owns the serial port
/// and the clock (any clock: tests run it on simulated time).
///
/// What it does, in the order MDB hosts in the field use:
/// - master mode (`M,1`) and the adapter's response timeout;
/// - SETUP, then POLLs until the changer has nothing left to report, so coins it took while
///   no host polled it are reported (with the values SETUP gives) before a RESET wipes them;
/// - RESET, then POLLs until the changer says it was reset; SETUP again; at level 3
///   IDENTIFICATION and FEATURE ENABLE (what it wants and the changer offers; a changer that
///   does not answer them is used without features); TUBE STATUS; COIN TYPE with the types it
///   is allowed to take (`setAllowed`, `setInhibited`);
/// - then a POLL every `pollIntervalNanoseconds`, TUBE STATUS every
///   `tubeStatusIntervalNanoseconds`, and COIN TYPE again whenever what it may take changes;
/// - a changer that reports it was reset is set up again (a reset disables every coin type);
///   one that stops answering is reported once and set up again from the start.
///
/// **Replies are matched in order.** The adapter answers every line, one line each, in the
/// order written, but it numbers nothing: a reply that comes after its timeout is still the
/// answer to its own line. So the host keeps the lines it wrote in a queue; a reply answers the
/// oldest; after a timeout it writes `V` as a fence (the adapter answers that itself) and waits
/// for the `v,` line, taking every reply before it for the lines it answers. A POLL's late
/// reply still reports its coins, and no reply is ever taken for a later line.
public struct MDBChangerHost: Sendable {
    public let configuration: MDBChangerHostConfiguration
    /// What the changer said of itself, once set up.
    public private(set) var setup: MDBChangerSetup?
    public private(set) var identity: MDBChangerIdentity?
    public private(set) var tubes: MDBTubeStatus?
    /// The coin types the changer last acknowledged taking; nil when unknown (before the setup,
    /// after a reset or an outage).
    public private(set) var accepting: UInt16?
    /// The coin types whose manual dispense buttons work, as last acknowledged; nil when unknown.
    public private(set) var acceptingManual: UInt16?
    /// Whether the changer (not only the adapter) answers.
    public private(set) var isResponding = true

    /// Where the setup stands.
    private enum Phase: Sendable, Hashable {
        case masterMode, responseTimeout
        /// SETUP before the RESET, to value what the changer still holds.
        case firstSetup
        /// POLLs until the changer has nothing to report, this many more at most.
        case draining(pollsLeft: Int)
        case reset
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
    /// Lines written and not yet answered, oldest first, with when each was written.
    private var outstanding: [(command: MDBAdapterCommand, sentAt: UInt64)] = []
    /// Lines without a usable answer since the changer last gave one, and since when.
    private var failures = 0
    private var failingSince: UInt64?
    /// A step that failed is tried again no sooner than this.
    private var notBefore: UInt64 = 0
    /// Step attempts that got no usable answer in this phase (IDENTIFICATION and FEATURE
    /// ENABLE are given up after two).
    private var attempts = 0
    private var allowed: UInt16 = 0
    private var inhibited = false
    private var nextPoll: UInt64 = 0
    private var nextTubeStatus: UInt64 = 0
    private var started = false
    /// The DISPENSE asked for and not yet counted.
    private var dispensing: Dispensing?
    /// The alternative payout (level 3) asked for and not yet counted.
    private var valuePaying: ValuePaying?
    /// Held still for a payout: no coin type taken, no manual dispense button working.
    private var heldForPayout = false
    /// When the changer acknowledged the hold; since when its POLLs have said nothing.
    private var holdAcknowledgedAt: UInt64?
    /// A POLL answered with nothing to report `stillNanoseconds` after the hold was
    /// acknowledged: no coin still on its way to a tube.
    public private(set) var isStill = false
    /// When the drain before the RESET began.
    private var drainStarted: UInt64 = 0

    /// A DISPENSE from asking to counting. The changer's tubes are its own account of what it
    /// paid: whatever the line did to the DISPENSE or its answer, the outcome is read from
    /// TUBE STATUS once the changer is no longer busy paying, never guessed.
    private struct Dispensing: Sendable, Hashable {
        var type: Int
        var count: Int
        var stage: Stage
        /// The changer reported a tube or coin jam while paying.
        var jammed = false
        /// A coin went into a tube, or a manual dispense paid, while it lasted: its tubes
        /// moved for something other than the DISPENSE.
        var disturbed = false
        /// "Payout busy" lasted past `payoutTimeoutNanoseconds`, or was never said: counted while
        /// it may still pay.
        var timedOut = false
        /// Counted by a new setup (after a reset or an outage), not in the flow of the DISPENSE.
        var acrossSetup = false

        enum Stage: Sendable, Hashable {
            /// Not written yet: after any COIN TYPE change, when the line is free.
            case waiting
            /// Written at `since`: the changer may be paying from then on. POLLs run until one
            /// no longer says "payout busy" (after one did, or `payoutStartNanoseconds`).
            case paying(since: UInt64, sawBusy: Bool)
            /// Done paying: the next TUBE STATUS is the outcome.
            case counting
        }
    }

    /// An alternative payout (PAYOUT 0Fh 02h) from asking to counting: as a DISPENSE, its outcome
    /// is the tubes counted once the changer is no longer paying. PAYOUT VALUE POLLs (0Fh 04h)
    /// take turns with POLLs until it answers ACK alone (over); PAYOUT STATUS (0Fh 03h) then
    /// gives the changer's own coins per type, read beside the tubes, never instead of them.
    private struct ValuePaying: Sendable, Hashable {
        var scaledValue: Int
        var stage: Stage
        var jammed = false
        var disturbed = false
        var timedOut = false
        var acrossSetup = false
        var status: MDBPayoutStatus?
        /// Value polls and POLLs take turns while it pays: the next slot is a value poll.
        var valuePollNext = true
        /// When it last paid a coin (a value poll's value above 0), or was asked: it is given up
        /// on `payoutTimeoutNanoseconds` after that, however long it goes on paying before.
        var progressAt: UInt64 = 0
        /// It said it was paying (a value poll's answer, "payout busy"): an ACK to a value poll
        /// before that, within `payoutStartNanoseconds`, is a changer not started yet.
        var sawBusy = false
        /// How many tubes the count before it covered: a count that covers fewer is not taken.
        var reportedBefore = 0

        enum Stage: Sendable, Hashable {
            case waiting
            case paying(since: UInt64)
            /// Over (or given up waiting): one more POLL, for what the changer reported as it
            /// ended (a tube jam), then PAYOUT STATUS.
            case closing
            case status
            /// The next TUBE STATUS is the outcome.
            case counting
        }
    }

    public init(configuration: MDBChangerHostConfiguration = MDBChangerHostConfiguration()) {
        self.configuration = configuration
    }

    /// Whether the changer is set up and polled.
    public var isRunning: Bool { phase == .running }

    /// The coin types the changer should take: those allowed, with a value, unless inhibited
    /// or held for a payout.
    public var wanted: UInt16 {
        guard !inhibited, !heldForPayout, let setup else { return 0 }
        var mask: UInt16 = 0
        for type in 0..<16 where allowed & (1 << type) != 0 && setup.valueMinor(ofType: type) != nil { mask |= 1 << type }
        return mask
    }

    /// The coin types whose manual dispense buttons may pay: none while held for a payout, so
    /// that only the payout moves the tubes.
    public var wantedManual: UInt16 { heldForPayout ? 0 : configuration.manualDispense }

    /// When the host next has something to do if no byte arrives.
    public var nextWake: UInt64? {
        guard started else { return nil }
        // Every line before the newest is answered before it: its timeout is the one that counts.
        if let newest = outstanding.last { return newest.sentAt &+ configuration.replyTimeoutNanoseconds }
        switch phase {
        case .settling(let until), .away(let until): return max(until, notBefore)
        case .draining, .awaitingReset, .running: return max(nextPoll, notBefore)
        default: return notBefore
        }
    }

    public mutating func start(now: UInt64) -> [MDBChangerHostOutput] {
        started = true
        outstanding.removeAll()
        parser = MDBAdapterLineParser()
        enter(.masterMode, now: now)
        var outputs: [MDBChangerHostOutput] = []
        sendNext(now: now, &outputs)
        return outputs
    }

    /// The coin types the chain and the operator let the changer take (bit n: type n).
    public mutating func setAllowed(_ types: UInt16, now: UInt64) -> [MDBChangerHostOutput] {
        allowed = types
        var outputs: [MDBChangerHostOutput] = []
        sendNext(now: now, &outputs)
        return outputs
    }

    /// Inhibit on (the changer takes no coin: COIN TYPE 0) or off.
    public mutating func setInhibited(_ on: Bool, now: UInt64) -> [MDBChangerHostOutput] {
        inhibited = on
        var outputs: [MDBChangerHostOutput] = []
        sendNext(now: now, &outputs)
        return outputs
    }

    /// The driver is letting go of the changer (a stop, a lost port): COIN TYPE 0, so that it
    /// takes no coin while nobody polls it, written at once whatever is in flight (the adapter
    /// answers in order, and nobody waits for this answer). Nothing more is sent until `start`.
    /// Coins it has not yet reported stay in its POLL replies for the next start's drain; a
    /// POLL in flight is reported lost (the changer forgets what it answers).
    public mutating func stop(now: UInt64) -> [MDBChangerHostOutput] {
        guard started else { return [] }
        started = false
        var outputs: [MDBChangerHostOutput] = outstanding.contains { Self.code($0.command) == MDBChangerCommand.pollCode }
            ? [.event(.pollReplyLost)] : []
        outstanding.removeAll()
        accepting = nil
        acceptingManual = nil
        holdAcknowledgedAt = nil
        isStill = false
        let none = MDBChangerCommand.coinType(accept: 0, manualDispense: wantedManual)
        if let transaction = try? none.transaction() { outputs.append(.send(.transaction(transaction))) }
        return outputs
    }

    /// Holds the changer still for a payout (COIN TYPE 0, manual dispense off), or lets it go.
    /// `isStill` says when the hold is acknowledged and the changer has gone quiet.
    public mutating func holdForPayout(_ on: Bool, now: UInt64) -> [MDBChangerHostOutput] {
        heldForPayout = on
        isStill = false
        // Already at COIN TYPE 0 with the buttons off (an operator's inhibit, a restart's
        // hold): acknowledged now; otherwise when the COIN TYPE that asks it is.
        holdAcknowledgedAt = on && accepting == 0 && acceptingManual == 0 ? now : nil
        var outputs: [MDBChangerHostOutput] = []
        sendNext(now: now, &outputs)
        return outputs
    }

    /// Whether a DISPENSE or an alternative payout is asked for and not yet counted
    /// (`dispensed` or `paidValue` reports it).
    public var isDispensing: Bool { dispensing != nil || valuePaying != nil }

    /// Whether the changer pays a value itself (level 3 with the alternative payout offered
    /// and switched on).
    public var paysValue: Bool {
        guard let setup, setup.level >= 3, let identity else { return false }
        return configuration.features.intersection(identity.features).contains(.alternativePayout)
    }

    /// Pays `scaledValue` (1 to 255 of the changer's scaled units) in coins the changer chooses
    /// (level 3's alternative payout). The outcome comes as `.paidValue` with the tubes counted
    /// after the changer stopped paying, also across a reset or an outage. One payout at a time:
    /// false while a DISPENSE or another is under way, or where the changer cannot.
    public mutating func payValue(scaled scaledValue: Int, now: UInt64) -> (accepted: Bool, outputs: [MDBChangerHostOutput]) {
        guard paysValue, dispensing == nil, valuePaying == nil, (1...255).contains(scaledValue) else { return (false, []) }
        valuePaying = ValuePaying(scaledValue: scaledValue, stage: .waiting, reportedBefore: tubes?.reported ?? 0)
        var outputs: [MDBChangerHostOutput] = []
        sendNext(now: now, &outputs)
        return (true, outputs)
    }

    /// Pays `count` (1 to 15) coins of `type` from its tube. The outcome comes as `.dispensed`
    /// with the tubes counted after the changer stopped paying, also across a reset or an
    /// outage (then from the tubes the new setup reads). One at a time: false while another is
    /// under way, or for a command the bus cannot carry.
    public mutating func dispense(type: Int, count: Int, now: UInt64) -> (accepted: Bool, outputs: [MDBChangerHostOutput]) {
        guard dispensing == nil, valuePaying == nil, (try? MDBChangerCommand.dispense(type: type, count: count).transaction()) != nil else { return (false, []) }
        dispensing = Dispensing(type: type, count: count, stage: .waiting)
        var outputs: [MDBChangerHostOutput] = []
        sendNext(now: now, &outputs)
        return (true, outputs)
    }

    /// Counts the tubes (TUBE STATUS) as soon as the line is free; `.tubes` reports it.
    public mutating func countTubes(now: UInt64) -> [MDBChangerHostOutput] {
        nextTubeStatus = now
        var outputs: [MDBChangerHostOutput] = []
        sendNext(now: now, &outputs)
        return outputs
    }

    /// Time passed: a line unanswered, a POLL due, the settle or the outage over.
    public mutating func tick(now: UInt64) -> [MDBChangerHostOutput] {
        var outputs: [MDBChangerHostOutput] = []
        if let newest = outstanding.last {
            guard now &- newest.sentAt >= configuration.replyTimeoutNanoseconds else { return outputs }
            timedOut(now: now, &outputs)
            return outputs
        }
        sendNext(now: now, &outputs)
        return outputs
    }

    /// Bytes read from the adapter at `now`. Every reply in them answers a line already
    /// written; the next line is written only after all of them are taken.
    public mutating func received(_ bytes: some Sequence<UInt8>, at now: UInt64) -> [MDBChangerHostOutput] {
        var outputs: [MDBChangerHostOutput] = []
        var replies: [MDBAdapterReply?] = []
        parser.feed(bytes) { event in
            switch event {
            case .reply(let reply): replies.append(reply)
            case .error(let error):
                outputs.append(.event(.adapterError(error)))
                replies.append(nil)  // a line all the same: it answered the oldest, unreadably
            }
        }
        for reply in replies { take(reply, now: now, &outputs) }
        sendNext(now: now, &outputs)
        return outputs
    }

    // MARK: Matching replies

    private mutating func take(_ reply: MDBAdapterReply?, now: UInt64, _ outputs: inout [MDBChangerHostOutput]) {
        // A fence's `v,` answers it; the lines before it that got no reply of their own lost it.
        if case .version(let text) = reply {
            guard let fence = outstanding.firstIndex(where: { $0.command == .version }) else {
                return outputs.append(.event(.unexpectedReply("v,\(text)")))
            }
            for lost in outstanding[..<fence] { lostReply(to: lost.command, now: now, &outputs) }
            outstanding.removeFirst(fence + 1)
            return
        }
        guard let oldest = outstanding.first else {
            if let reply { outputs.append(.event(.unexpectedReply(reply.text))) }
            return
        }
        outstanding.removeFirst()
        guard let reply else { return lostReply(to: oldest.command, now: now, &outputs) }
        handle(reply, to: oldest.command, now: now, &outputs)
    }

    /// A line's reply did not come in time: fence, and count it.
    private mutating func timedOut(now: UInt64, _ outputs: inout [MDBChangerHostOutput]) {
        if outstanding.contains(where: { $0.command == .version }) {
            // The fence itself is unanswered: the adapter is gone too. Start again.
            let lines = outstanding
            outstanding.removeAll()
            for line in lines where line.command != .version { lostReply(to: line.command, now: now, &outputs) }
            return
        }
        send(.version, now: now, &outputs)
    }

    /// A line that will get no reply: the step is tried again a poll interval later, and after
    /// `nonResponseNanoseconds` without a usable answer the changer counts as gone.
    private mutating func lostReply(to command: MDBAdapterCommand, now: UInt64, _ outputs: inout [MDBChangerHostOutput]) {
        if Self.code(command) == MDBChangerCommand.pollCode {
            // Whatever it carried (a deposit, a jam) is unknown: not still, and a DISPENSE under
            // way is not believed if it counts short.
            if heldForPayout { isStill = false }
            if dispensing != nil { dispensing?.disturbed = true }
            if valuePaying != nil { valuePaying?.disturbed = true }
            // The coins it reported are gone with it (POLL is destructive); the tube counts are
            // what trace is left, so they are read next.
            outputs.append(.event(.pollReplyLost))
            nextTubeStatus = now
        }
        if Self.code(command) == MDBChangerCommand.coinTypeCode {
            // The changer may have taken it: what it accepts is unknown until a COIN TYPE is
            // answered. Kept as the last answer, a hold right after a let-go whose reply was
            // lost was taken for granted while the changer took coins into its tubes mid-payout
            // (the crash suite's MDB run: a deposit hid a coin paid, unpaid_unrecorded 1).
            forgetAcceptance(&outputs)
        }
        failed(now: now, &outputs)
    }

    private mutating func failed(now: UInt64, _ outputs: inout [MDBChangerHostOutput]) {
        failures += 1
        attempts += 1
        notBefore = now &+ configuration.pollIntervalNanoseconds
        let since = failingSince ?? now
        failingSince = since
        guard now &- since >= configuration.nonResponseNanoseconds else { return }
        if isResponding {
            isResponding = false
            outputs.append(.event(.notResponding(failures: failures)))
        }
        failures = 0
        failingSince = nil
        attempts = 0
        forgetAcceptance(&outputs)
        phase = .away(until: now &+ configuration.reconnectIntervalNanoseconds)
    }

    // MARK: The sequence

    /// Sends what the phase calls for, if nothing is on the wire and it is time.
    private mutating func sendNext(now: UInt64, _ outputs: inout [MDBChangerHostOutput]) {
        guard started, outstanding.isEmpty, now >= notBefore else { return }
        switch phase {
        case .masterMode: send(.masterMode(true), now: now, &outputs)
        case .responseTimeout: send(.responseTimeout(milliseconds: configuration.responseTimeoutMilliseconds), now: now, &outputs)
        case .firstSetup, .setup: changer(.setup, now: now, &outputs)
        case .draining, .awaitingReset:
            if now >= nextPoll { changer(.poll, now: now, &outputs) }
        case .reset: changer(.reset, now: now, &outputs)
        case .settling(let until):
            guard now >= until else { return }
            enter(.awaitingReset(pollsLeft: configuration.justResetPolls), now: now)
            sendNext(now: now, &outputs)
        case .identification:
            guard attempts < 2 else { return skip(to: .tubeStatus, now: now, &outputs) }
            changer(.identification, now: now, &outputs)
        case .featureEnable:
            guard attempts < 2 else { return skip(to: .tubeStatus, now: now, &outputs) }
            changer(.featureEnable(configuration.features.intersection(identity?.features ?? []).rawValue), now: now, &outputs)
        case .tubeStatus: changer(.tubeStatus, now: now, &outputs)
        case .coinType: changer(.coinType(accept: wanted, manualDispense: wantedManual), now: now, &outputs)
        case .running:
            if accepting != wanted || acceptingManual != wantedManual {
                changer(.coinType(accept: wanted, manualDispense: wantedManual), now: now, &outputs)
            } else if let asked = dispensing, asked.stage == .waiting {
                changer(.dispense(type: asked.type, count: asked.count), now: now, &outputs)
                dispensing?.stage = .paying(since: now, sawBusy: false)
            } else if let asked = valuePaying, asked.stage == .waiting {
                // Every command this host sends is within the bus's limits (1 to 255 checked).
                changer(.payout(scaledValue: UInt8(asked.scaledValue)), now: now, &outputs)
                valuePaying?.stage = .paying(since: now)
                valuePaying?.progressAt = now
                nextPoll = now &+ configuration.pollIntervalNanoseconds
            } else if let asked = valuePaying, case .paying = asked.stage, now &- asked.progressAt >= configuration.payoutTimeoutNanoseconds {
                // No coin paid for that long (or no answer at all): counted, and not believed if
                // short. Checked on every turn, so that a changer that answers POLLs but no
                // value poll is not waited on for ever.
                valuePaying?.timedOut = true
                valuePaying?.stage = .closing
                changer(.poll, now: now, &outputs)
            } else if valuePaying?.stage == .closing {
                changer(.poll, now: now, &outputs)
            } else if valuePaying?.stage == .status {
                changer(.payoutStatus, now: now, &outputs)
            } else if now >= nextTubeStatus {
                changer(.tubeStatus, now: now, &outputs)
            } else if now >= nextPoll {
                if let asked = valuePaying, case .paying = asked.stage, asked.valuePollNext {
                    valuePaying?.valuePollNext = false
                    nextPoll = now &+ configuration.pollIntervalNanoseconds
                    changer(.payoutValuePoll, now: now, &outputs)
                } else {
                    valuePaying?.valuePollNext = true
                    changer(.poll, now: now, &outputs)
                }
            }
        case .away(let until):
            guard now >= until else { return }
            enter(.masterMode, now: now)
            sendNext(now: now, &outputs)
        }
    }

    private mutating func handle(_ reply: MDBAdapterReply, to command: MDBAdapterCommand, now: UInt64, _ outputs: inout [MDBChangerHostOutput]) {
        // Nobody answered on the bus: as if no reply came. A COIN TYPE may have been taken with
        // its ACK lost on the bus: what the changer accepts is unknown, as for a lost reply.
        if case .peripheral(.noAnswer) = reply {
            if Self.code(command) == MDBChangerCommand.coinTypeCode { forgetAcceptance(&outputs) }
            return failed(now: now, &outputs)
        }
        if case .peripheral = reply {
            if !isResponding {
                isResponding = true
                outputs.append(.event(.responding))
            }
            failures = 0
            failingSince = nil
        }
        let code = Self.code(command)
        // A POLL's reply reports its coins whatever the phase: the changer will not repeat them.
        if code == MDBChangerCommand.pollCode, case .peripheral(let answer) = reply {
            return polled(answer, now: now, &outputs)
        }
        switch (phase, reply) {
        case (.masterMode, .masterMode(true)):
            enter(.responseTimeout, now: now)
        case (.responseTimeout, .configuration):
            enter(.firstSetup, now: now)  // an adapter that does not take the setting keeps its own
        case (.firstSetup, .peripheral(.data(let bytes))) where code == MDBChangerCommand.setupCode,
             (.setup, .peripheral(.data(let bytes))) where code == MDBChangerCommand.setupCode:
            do throws(MDBReplyError) {
                setup = try MDBChangerSetup(reply: bytes)
            } catch {
                outputs.append(.event(.replyError(error)))
                return failed(now: now, &outputs)
            }
            if phase == .firstSetup {
                drainStarted = now
                enter(.draining(pollsLeft: configuration.justResetPolls), now: now)
            } else {
                identity = nil
                enter((setup?.level ?? 2) >= 3 ? .identification : .tubeStatus, now: now)
            }
        case (.reset, .peripheral(.ack)) where code == MDBChangerCommand.resetCode:
            enter(.settling(until: now &+ configuration.resetSettleNanoseconds), now: now)
        case (.identification, .peripheral(.data(let bytes))) where code == MDBChangerCommand.expansionCode:
            do throws(MDBReplyError) {
                identity = try MDBChangerIdentity(reply: bytes)
            } catch {
                outputs.append(.event(.replyError(error)))
            }
            let wanted = configuration.features.intersection(identity?.features ?? [])
            enter(wanted.isEmpty ? .tubeStatus : .featureEnable, now: now)
        case (.identification, .peripheral(.ack)) where code == MDBChangerCommand.expansionCode:
            enter(.tubeStatus, now: now)  // a level-3 changer with nothing to say: no features
        case (.featureEnable, .peripheral(.ack)) where code == MDBChangerCommand.expansionCode:
            enter(.tubeStatus, now: now)
        case (.tubeStatus, .peripheral(.data(let bytes))) where code == MDBChangerCommand.tubeStatusCode:
            guard readTubes(bytes, now: now, &outputs) else { return failed(now: now, &outputs) }
            // A DISPENSE written before the changer was set up again (a reset, an outage): it
            // is not paying now (the drain waited out "payout busy"), so these tubes count it.
            if var asked = dispensing, asked.stage != .waiting {
                // A reset, an outage or a drain that ran out came between: the changer may not be
                // the one that paid, or may not be done. Counted, but not believed if short.
                asked.acrossSetup = true
                count(asked, now: now, &outputs)
            }
            if var asked = valuePaying, asked.stage != .waiting {
                asked.acrossSetup = true
                countValue(asked, &outputs)
            }
            enter(.coinType, now: now)
        case (.running, .peripheral(.data(let bytes))) where code == MDBChangerCommand.tubeStatusCode:
            guard readTubes(bytes, now: now, &outputs) else { return }
            if let tubes { outputs.append(.event(.tubes(tubes))) }
            if let asked = dispensing, asked.stage == .counting { count(asked, now: now, &outputs) }
            if let asked = valuePaying, asked.stage == .counting { countValue(asked, &outputs) }
        case (.running, .peripheral(.ack)) where code == MDBChangerCommand.dispenseCode:
            break  // paying: the POLLs say until when
        case (.running, .peripheral(let answer)) where code == MDBChangerCommand.expansionCode && Self.subcode(command) != nil:
            valuePayoutAnswered(Self.subcode(command)!, answer, now: now, &outputs)
        case (.coinType, .peripheral(.ack)) where code == MDBChangerCommand.coinTypeCode,
             (.running, .peripheral(.ack)) where code == MDBChangerCommand.coinTypeCode:
            coinTypeTaken(command, now: now, &outputs)
            if phase == .coinType, let setup {
                enter(.running, now: now)
                outputs.append(.event(.ready(setup, identity, tubes)))
            }
        default:
            // Not the answer this step needs (a NACK to master mode, data where an ACK was
            // due, a reply to a line of an earlier step): the step is tried again.
            outputs.append(.event(.unexpectedReply(reply.text)))
            failed(now: now, &outputs)
        }
    }

    /// A POLL's reply: its events reported; the phase moves on what they say.
    private mutating func polled(_ answer: MDBAdapterReply.Answer, now: UInt64, _ outputs: inout [MDBChangerHostOutput]) {
        var events: [MDBChangerEvent] = []
        if case .data(let bytes) = answer {
            let poll = MDBPollReply(data: bytes)
            events = poll.events
            report(events, &outputs)
            if let problem = poll.problem { outputs.append(.event(.replyError(problem))) }
        }
        let wasReset = events.contains(.status(.changerWasReset))
        let busyPaying = events.contains(.status(.payoutBusy))
        nextPoll = now &+ configuration.pollIntervalNanoseconds
        // While held, anything that moves a tube other than the DISPENSE is noted, and the
        // changer is still again only after a quiet POLL.
        let movedTubes = events.contains { event in
            switch event {
            case .deposited(_, let routing, _): routing == .tube
            case .dispensedManually: true
            default: false
            }
        }
        if heldForPayout {
            if movedTubes {
                isStill = false
                if holdAcknowledgedAt != nil { holdAcknowledgedAt = now }
                if dispensing != nil { dispensing?.disturbed = true }
                if valuePaying != nil { valuePaying?.disturbed = true }
            } else if answer == .ack, let since = holdAcknowledgedAt, now &- since >= configuration.stillNanoseconds {
                isStill = true
            }
        }
        // A tube jam while paying explains a short count; a coin jam is the acceptor's, not the payout's.
        if let asked = dispensing, case .paying = asked.stage, events.contains(.status(.tubeJam)) { dispensing?.jammed = true }
        if let asked = valuePaying, asked.stage != .waiting, asked.stage != .counting, events.contains(.status(.tubeJam)) { valuePaying?.jammed = true }
        if busyPaying, let asked = valuePaying, case .paying = asked.stage { valuePaying?.sawBusy = true }
        if let asked = valuePaying, asked.stage == .closing {
            // Still paying after all (and paid within the timeout): back to the value polls.
            if busyPaying && !asked.timedOut && now &- asked.progressAt < configuration.payoutTimeoutNanoseconds {
                valuePaying?.stage = .paying(since: now)
                valuePaying?.sawBusy = true
            } else {
                valuePaying?.stage = .status
            }
        }
        if let asked = dispensing, case .paying(let since, let sawBusy) = asked.stage, phase == .running {
            let elapsed = now &- since
            if busyPaying && elapsed < configuration.payoutTimeoutNanoseconds {
                dispensing?.stage = .paying(since: since, sawBusy: true)
            } else if sawBusy || elapsed >= configuration.payoutStartNanoseconds {
                // Still busy past the timeout, or never said busy at all (a changer that starts
                // late would still be paying): the count may be short of what it pays.
                if busyPaying || !sawBusy { dispensing?.timedOut = true }
                dispensing?.stage = .counting
                nextTubeStatus = now
            }
        }
        switch phase {
        case .draining(let left):
            // Drained (nothing more to say) or given up: now the RESET. A changer still paying
            // a payout (one a host that died had asked for) is let finish first, so that the
            // tubes read after the setup count it.
            if busyPaying, now &- drainStarted < configuration.payoutTimeoutNanoseconds { break }
            if answer == .ack || left <= 1 { enter(.reset, now: now) } else { phase = .draining(pollsLeft: left - 1) }
        case .awaitingReset(let left):
            if wasReset || left <= 1 { enter(.setup, now: now) } else { phase = .awaitingReset(pollsLeft: left - 1) }
        case .running where wasReset:
            // A reset disables every coin type: set it up again.
            forgetAcceptance(&outputs)
            enter(.setup, now: now)
        default:
            break
        }
    }

    private mutating func report(_ events: [MDBChangerEvent], _ outputs: inout [MDBChangerHostOutput]) {
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
    }

    private mutating func enter(_ next: Phase, now: UInt64) {
        phase = next
        attempts = 0
        nextPoll = now
    }

    private mutating func skip(to next: Phase, now: UInt64, _ outputs: inout [MDBChangerHostOutput]) {
        enter(next, now: now)
        sendNext(now: now, &outputs)
    }

    /// The tubes just read are the DISPENSE's outcome.
    private mutating func count(_ asked: Dispensing, now: UInt64, _ outputs: inout [MDBChangerHostOutput]) {
        dispensing = nil
        guard let tubes else { return }
        var dispense = MDBDispense(type: asked.type, count: asked.count, tubes: tubes, jammed: asked.jammed,
                                   disturbed: asked.disturbed || asked.acrossSetup, timedOut: asked.timedOut)
        dispense.countedAtSetup = asked.acrossSetup
        outputs.append(.event(.dispensed(dispense)))
    }

    /// The tubes just read are the alternative payout's outcome.
    private mutating func countValue(_ asked: ValuePaying, _ outputs: inout [MDBChangerHostOutput]) {
        valuePaying = nil
        guard let tubes else { return }
        var payout = MDBValuePayout(scaledValue: asked.scaledValue, tubes: tubes, status: asked.status, jammed: asked.jammed,
                                    disturbed: asked.disturbed || asked.acrossSetup, timedOut: asked.timedOut)
        payout.countedAtSetup = asked.acrossSetup
        outputs.append(.event(.paidValue(payout)))
    }

    /// An answer to PAYOUT, PAYOUT VALUE POLL or PAYOUT STATUS (their sub-command `sub`).
    private mutating func valuePayoutAnswered(_ sub: UInt8, _ answer: MDBAdapterReply.Answer, now: UInt64, _ outputs: inout [MDBChangerHostOutput]) {
        guard let asked = valuePaying else { return outputs.append(.event(.unexpectedReply("a PAYOUT reply with no payout under way"))) }
        switch (sub, answer, asked.stage) {
        case (0x02, .ack, _):
            break  // paying: the value polls say until when
        case (0x04, .data(let bytes), .paying):
            // Still paying (the value is not counted on: the tubes tell); a coin paid is progress.
            valuePaying?.sawBusy = true
            if (bytes.first ?? 0) > 0 { valuePaying?.progressAt = now }
        case (0x04, .ack, .paying(let since)):
            // Over, unless it has not started yet (no word of paying, and soon after PAYOUT).
            if asked.sawBusy || now &- since >= configuration.payoutStartNanoseconds { valuePaying?.stage = .closing }
        case (0x03, .data(let bytes), .status):
            do throws(MDBReplyError) {
                valuePaying?.status = try MDBPayoutStatus(reply: bytes)
            } catch {
                outputs.append(.event(.replyError(error)))
            }
            valuePaying?.stage = .counting
            nextTubeStatus = now
        case (0x03, .ack, .status):
            // Still paying after all: counted, but not believed if short.
            valuePaying?.timedOut = true
            valuePaying?.stage = .counting
            nextTubeStatus = now
        default:
            outputs.append(.event(.unexpectedReply("a PAYOUT reply that does not fit where the payout stands")))
        }
    }

    private mutating func forgetAcceptance(_ outputs: inout [MDBChangerHostOutput]) {
        holdAcknowledgedAt = nil
        isStill = false
        acceptingManual = nil
        guard accepting != nil else { return }
        accepting = nil
        outputs.append(.event(.acceptanceUnknown))
    }

    /// Takes a TUBE STATUS reply; false (and the next one soon) if it cannot be read, or does
    /// not count the tube of the DISPENSE being counted.
    @discardableResult
    private mutating func readTubes(_ bytes: [UInt8], now: UInt64, _ outputs: inout [MDBChangerHostOutput]) -> Bool {
        nextTubeStatus = now &+ configuration.tubeStatusIntervalNanoseconds
        do throws(MDBReplyError) {
            let read = try MDBTubeStatus(reply: bytes)
            if let asked = valuePaying, asked.stage != .waiting, read.reported < asked.reportedBefore {
                outputs.append(.event(.unexpectedReply("TUBE STATUS counts \(read.reported) tubes, fewer than the \(asked.reportedBefore) counted before the payout")))
                nextTubeStatus = now &+ configuration.pollIntervalNanoseconds
                return false
            }
            if let asked = dispensing, asked.stage != .waiting, read.reported <= asked.type {
                outputs.append(.event(.unexpectedReply("TUBE STATUS counts \(read.reported) tubes, not the tube of type \(asked.type) being paid from")))
                nextTubeStatus = now &+ configuration.pollIntervalNanoseconds
                return false
            }
            tubes = read
            return true
        } catch {
            outputs.append(.event(.replyError(error)))
            nextTubeStatus = now &+ configuration.pollIntervalNanoseconds
            return false
        }
    }

    /// The changer acknowledged a COIN TYPE: it takes what the command asked.
    private mutating func coinTypeTaken(_ command: MDBAdapterCommand, now: UInt64, _ outputs: inout [MDBChangerHostOutput]) {
        defer {
            if heldForPayout {
                if accepting == 0, acceptingManual == 0 {
                    if holdAcknowledgedAt == nil { holdAcknowledgedAt = now }
                } else {
                    // A COIN TYPE sent before the hold, acknowledged after it: not held yet.
                    holdAcknowledgedAt = nil
                    isStill = false
                }
            }
        }
        guard case .transaction(let transaction) = command, transaction.data.count == 4 else { return }
        let mask = UInt16(transaction.data[0]) << 8 | UInt16(transaction.data[1])
        accepting = mask
        acceptingManual = UInt16(transaction.data[2]) << 8 | UInt16(transaction.data[3])
        outputs.append(.event(.accepting(mask)))
    }

    private mutating func changer(_ command: MDBChangerCommand, now: UInt64, _ outputs: inout [MDBChangerHostOutput]) {
        // Every command this host sends is within the bus's limits.
        guard let transaction = try? command.transaction() else { return }
        send(.transaction(transaction), now: now, &outputs)
    }

    private mutating func send(_ command: MDBAdapterCommand, now: UInt64, _ outputs: inout [MDBChangerHostOutput]) {
        outstanding.append((command, now))
        outputs.append(.send(command))
    }

    /// An EXPANSION line's sub-command (its first data byte) for the alternative payout's
    /// three (02h to 04h), else nil.
    private static func subcode(_ command: MDBAdapterCommand) -> UInt8? {
        guard case .transaction(let transaction) = command, transaction.address == MDBChangerCommand.address,
              transaction.command & 0x07 == MDBChangerCommand.expansionCode, let sub = transaction.data.first, (0x02...0x04).contains(sub) else { return nil }
        return sub
    }

    /// The changer command a line carries (its command byte's low three bits), if any.
    private static func code(_ command: MDBAdapterCommand) -> UInt8? {
        guard case .transaction(let transaction) = command, transaction.address == MDBChangerCommand.address else { return nil }
        return transaction.command & 0x07
    }
}
