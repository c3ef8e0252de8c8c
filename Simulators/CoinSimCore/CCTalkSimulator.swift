import CLinux
import CoinMechCCTalk

#if canImport(Glibc)
import CoinMechModel
import CoinMechSupport
import Glibc
#endif

/// Plays a ccTalk coin acceptor (`CCTalkAcceptor`) on a pseudo-terminal from a scenario, and
/// reports the ground truth (`CCTalkGroundTruth`): `coinsim --protocol cctalk`.
///
/// Coins go in at the scenario's rate from `cctalk.start_ms` after the host first read the
/// buffer whole (an intact reply to a buffer poll reached the line), so what the buffer held
/// then is exactly the backlog from before the host came, however slowly the host started;
/// the acceptor decides them itself and puts an event in its buffer. The host's
/// requests are answered after `cctalk.reply_ms`, bytes taking their time at the scenario's
/// baud rate both ways; replies to buffer polls are lost, refused, BUSY or damaged as the
/// faults say; the line echoes the host's bytes when `cctalk.echo` is set.
///
/// The payout hoppers of `cctalk.hoppers` (`CCTalkHopper`) share the bus at their own
/// addresses: their replies take the same time and the same line, their coins drop as time
/// passes whether or not anyone listens, and a hopper losing power silences only itself.
///
/// Single-threaded: one `ppoll` loop over the pty and a signalfd, like `MechSimulator`.
public final class CCTalkSimulator {
    public typealias Options = SimulatorOptions

    private struct Outgoing {
        var deliverAt: UInt64
        var bytes: [UInt8]
        /// The events an intact buffer reply carries.
        var reported: [CCTalkAcceptor.EventKey]
        /// The acknowledged request was a reset: the device restarts once it is out.
        var resets: Bool
        /// The hopper (index in `hoppers`) that replied; nil for the acceptor.
        var hopper: Int? = nil
        /// An intact reply to a buffer poll: once out, the host knows what the buffer holds.
        var readsBuffer = false
    }

    private let options: Options
    private let scenario: Scenario
    private let settings: CCTalkScenario
    private let announce: @Sendable (String) -> Void
    private var generator: InsertionGenerator
    private var acceptor: CCTalkAcceptor
    private var hoppers: [CCTalkHopper]
    /// Address → index in `hoppers`.
    private let hopperIndex: [UInt8: Int]
    private var truth: CCTalkGroundTruth
    private var faultRandom: SplitMix64
    private var parser: CCTalkParser
    private let positions: [CoinID: Int]
    private var terminal: PseudoTerminal?
    private var connected = false
    private var outgoing: [Outgoing] = []
    /// When the acceptor → host line is free again, and the host → acceptor line.
    private var lineFreeAt: UInt64 = 0
    private var hostLineFreeAt: UInt64 = 0
    private var eventIndex: [CCTalkAcceptor.EventKey: Int] = [:]
    /// Events that left the buffer while a reply carrying them was on its way, and how.
    private var leftInFlight: [CCTalkAcceptor.EventKey: String] = [:]
    private var coinIndex: [CCTalkAcceptor.EventKey: Int] = [:]
    private var poweredOffUntil: UInt64?
    private var lastRequestAt: UInt64?
    /// When the first intact buffer reply went out: the coins start `start_ms` after.
    private var bufferFirstReadAt: UInt64?
    /// Insertion numbers whose reset or power cycle was already played.
    private var played: Set<Int> = []
    /// Per hopper: the line's faults played (lost replies, NAK, BUSY), and where its exchange
    /// stands (`faults.exchange_after`).
    private var hopperLine: [(lostReplies: Int, naks: Int, busies: Int)]
    private var exchange: [Exchange]

    private enum Exchange {
        /// Waits for the hopper's Nth dispense to end.
        case waiting(after: Int)
        /// Its dispense has ended: exchanged once the host moves on (a dispense to another
        /// hopper, or payouts disabled a second time: the payout settled and let go).
        case armed(disables: Int)
        case done
    }
    private var recorder: TraceWriter?
    private let start: UInt64

    public init(scenario: Scenario, options: Options = Options(), announce: @escaping @Sendable (String) -> Void) {
        self.options = options
        self.scenario = scenario
        settings = scenario.cctalk
        self.announce = announce
        generator = InsertionGenerator(scenario: scenario)
        faultRandom = SplitMix64(seed: scenario.seed ^ 0xCC7A_1C00_5EED_0001)
        var device = CCTalkAcceptor.Settings()
        device.address = settings.address
        device.checksum = settings.checksum
        device.manufacturer = settings.manufacturer
        device.productCode = settings.productCode
        device.serialNumber = settings.serialNumber
        device.coinIDs = settings.coinIDs(currency: scenario.currency)
        device.sorterPath = settings.sorterPath
        device.selfInhibitNanoseconds = UInt64(settings.selfInhibitMilliseconds * 1e6)
        acceptor = settings.counter > 0 ? CCTalkAcceptor(settings: device, runningWithCounter: settings.counter) : CCTalkAcceptor(settings: device)
        positions = Dictionary(device.coinIDs.map { ($0.value, $0.key) }, uniquingKeysWith: min)
        hoppers = settings.hoppers.map { CCTalkHopper(settings: $0.device) }
        hopperLine = settings.hoppers.map { _ in (0, 0, 0) }
        exchange = settings.hoppers.map { $0.faults.exchangeAfter.map { Exchange.waiting(after: $0) } ?? .done }
        hopperIndex = Dictionary(uniqueKeysWithValues: settings.hoppers.enumerated().map { ($0.element.address, $0.offset) })
        parser = CCTalkParser(checksum: settings.checksum,
                              destinations: Set([settings.address, CCTalkFrame.broadcastAddress] + settings.hoppers.map(\.address)))
        truth = CCTalkGroundTruth(scenario: scenario.name, seed: scenario.seed, device: CCTalkGroundTruth.Device(
            address: settings.address, checksum: settings.checksum.rawValue, echo: settings.echo, serialNumber: settings.serialNumber,
            coinIds: Dictionary(uniqueKeysWithValues: device.coinIDs.map { ("\($0.key)", $0.value.text) }), initialCounter: settings.counter))
        start = Instant.now.nanoseconds
        // What the buffer holds from before the host came.
        for (slot, key) in acceptor.slots.enumerated().reversed() {
            guard let key else { continue }
            let result = acceptor.results[slot]
            eventIndex[key] = truth.events.count
            truth.events.append(CCTalkGroundTruth.Event(session: key.session, event: key.number, counter: CCTalkCounterState.counter(for: key.number),
                                                        a: result.a, b: result.b, beforeHost: true, reported: false, lost: false, lostTo: nil))
        }
    }

    /// Runs the session to its end (or SIGTERM/SIGINT) and returns the ground truth.
    public func run() throws(SimulatorError) -> CCTalkGroundTruth {
        let (signals, terminal) = try (SimulatorSignals(), PseudoTerminal.offer(options, recorder: &recorder, connections: &truth.connections, announce: announce))
        self.terminal = terminal

        var nextInsertion: UInt64?
        var scheduled = false
        var end = SessionEnd(options: options, start: start)

        loop: while true {
            let now = Instant.now.nanoseconds
            let wake = end.wake(now: now, connected: connected, dues: [poweredOffUntil == nil && connected ? nextInsertion : nil, outgoing.map(\.deliverAt).min(),
                                                                      poweredOffUntil, hoppers.compactMap(\.nextEventAt).min()])
            let turn = try signals.wait(master: terminal.master, until: wake, now: now)
            if turn.stop {
                truth.ended = "signal"
                nextInsertion = nil
                end.stop(at: Instant.now.nanoseconds)
            }
            if turn.readable { readFromHost() }
            if turn.hungUp {
                if connected {
                    connected = false
                    truth.connections.hangups += 1
                    dropOutgoing()  // nobody reads the line
                    lastRequestAt = nil
                }
                usleep(5_000)
            } else if !connected && turn.open {
                connected = true
                truth.connections.connects += 1
            }
            if !connected, end.hostTimedOut(at: Instant.now.nanoseconds, everConnected: truth.connections.connects > 0) {
                truth.ended = "host_timeout"
                break loop
            }
            if let off = poweredOffUntil, Instant.now.nanoseconds >= off { poweredOffUntil = nil }
            advanceHoppers(to: Instant.now.nanoseconds)
            deliverOutgoing()
            if !scheduled, let read = bufferFirstReadAt {
                scheduled = true
                nextInsertion = read + UInt64(settings.startMilliseconds * 1e6)
            }
            if connected, poweredOffUntil == nil, !end.isStopping, let due = nextInsertion, Instant.now.nanoseconds >= due {
                if playInsertion() {
                    nextInsertion = nil
                    end.lastCoin(at: Instant.now.nanoseconds)
                } else if poweredOffUntil == nil {
                    nextInsertion = Instant.now.nanoseconds + UInt64(generator.gap(after: truth.sent.insertions) * 1e9)
                }
            }
            // Coins still dropping from a hopper keep the session going, as coins in the mech do.
            let paying = hoppers.contains { $0.payout != nil || $0.poweredOffUntil != nil }
            if end.isOver(at: Instant.now.nanoseconds, connected: connected, quiet: outgoing.isEmpty && !paying) { break loop }
        }
        finish()
        return truth
    }

    // MARK: Coins

    /// Makes the next insertion (or several, for an overrun); true when the scenario has no more.
    private func playInsertion() -> Bool {
        let number = truth.sent.insertions + 1
        guard scenario.coins == 0 || number <= scenario.coins else { return true }
        let faults = settings.faults
        if !played.contains(number) {
            played.insert(number)
            if faults.resetAt.contains(number) {
                truth.sessions.resets += 1
                restart()
            }
            if faults.powerCycleAt.contains(number) {
                truth.sessions.powerCycles += 1
                restart()
                dropOutgoing { $0.hopper == nil }  // what was on its way dies with the power (the hoppers have their own)
                poweredOffUntil = Instant.now.nanoseconds + UInt64(faults.powerOffMilliseconds * 1e6)
                return false  // this insertion waits for the power
            }
        }
        for _ in 0..<(faults.overrunAt.contains(number) ? faults.overrunCoins : 1) { insertOne() }
        return false
    }

    private func insertOne() {
        let insertion = generator.next()
        let now = Instant.now.nanoseconds
        truth.sent.insertions += 1
        truth.sent.byKind[insertion.kind.description, default: 0] += 1
        let item: CCTalkAcceptor.Item
        var value: (currency: String, valueMinor: Int64)?
        switch insertion.kind {
        case .coin(let spec):
            value = (spec.currency, FaceValues.faceValue(of: spec))
            let id = (1...999).contains(spec.valueMinor) ? CoinID.standard(currency: spec.currency, valueMinor: spec.valueMinor) : nil
            item = id.flatMap { positions[$0] }.map { .coin(position: $0) } ?? .unknown
        case .slug: item = .slug
        case .washer, .foreign, .fraud: item = .unknown
        }
        let selfInhibited = acceptor.isSelfInhibited(at: now)
        let outcome = acceptor.insert(item, at: now)
        let key = outcome.event
        eventIndex[key] = truth.events.count
        truth.events.append(CCTalkGroundTruth.Event(session: key.session, event: key.number, counter: acceptor.counter,
                                                    a: outcome.result.a, b: outcome.result.b, beforeHost: false, reported: false, lost: false, lostTo: nil))
        var position: Int?
        if case .coin(let p) = item { position = p }
        coinIndex[key] = truth.coins.count
        truth.coins.append(CCTalkGroundTruth.Coin(
            insertion: insertion.number, kind: insertion.kind.description, currency: value?.currency, valueMinor: value?.valueMinor,
            position: position, coinId: position.flatMap { acceptor.settings.coinIDs[$0]?.text }, outcome: outcome.fate.rawValue,
            session: key.session, event: key.number, counter: acceptor.counter))
        switch outcome.fate {
        case .credited:
            truth.outcomes.credited += 1
            if let value { truth.creditedValue[value.currency, default: 0] += value.valueMinor }
        case .inhibited:
            truth.outcomes.inhibited += 1
            if selfInhibited { truth.outcomes.selfInhibited += 1 }
        case .rejected:
            truth.outcomes.rejected += 1
        }
        if let evicted = outcome.evicted { left(evicted, to: "overrun") }
    }

    /// Power-up or reset: the buffer is gone.
    private func restart() {
        for key in acceptor.restart() { left(key, to: "restart") }
    }

    /// An event left the buffer: lost, unless a reply carried it to the host.
    private func left(_ key: CCTalkAcceptor.EventKey, to cause: String) {
        guard let index = eventIndex[key], !truth.events[index].reported, !truth.events[index].lost else { return }
        if outgoing.contains(where: { $0.reported.contains(key) }) {
            // A reply on its way carries it: it is lost only if that reply never gets out.
            leftInFlight[key] = cause
            return
        }
        truth.events[index].lost = true
        truth.events[index].lostTo = cause
        truth.lostEvents += 1
        guard truth.events[index].a > 0 else { return }
        truth.lostCredits += 1
        if let coin = coinIndex[key], let currency = truth.coins[coin].currency, let value = truth.coins[coin].valueMinor {
            truth.lostValue[currency, default: 0] += value
        }
    }

    // MARK: The line

    private func readFromHost() {
        guard let terminal, let bytes = terminal.read() else { return }
        let now = Instant.now.nanoseconds
        recorder?.write(TraceEntry(tUs: Int64((now - start) / 1000), dir: "rx", bytes: bytes))
        if settings.echo {
            // A single-wire bus: the host hears its own bytes as it sends them.
            truth.polls.echoBytes += bytes.count
            _ = terminal.write(bytes)
        }
        var frames: [CCTalkFrame] = []
        parser.feed(bytes, at: now) { if case .frame(let frame) = $0 { frames.append(frame) } }
        truth.polls.garbageBytes = parser.counts.garbageBytes
        truth.polls.badRequestChecksums = parser.counts.badChecksums
        advanceHoppers(to: now)
        for frame in frames {
            let hopper = hopperIndex[frame.destination]
            guard frame.destination == settings.address || hopper != nil else { continue }
            // Requests queue on the line: each has fully arrived after the one before.
            hostLineFreeAt = max(hostLineFreeAt, now) &+ transit(frame.encoded(settings.checksum).count)
            let arrival = scenario.firmware.baud == 0 ? now : hostLineFreeAt
            if let hopper {
                answerHopper(hopper, frame, at: now, arrival: arrival)
            } else if poweredOffUntil == nil {  // else nobody home
                answerAcceptor(frame, at: now, arrival: arrival)
            }
        }
    }

    /// Queues the acceptor's reply to `frame`, as the buffer-poll faults say.
    private func answerAcceptor(_ frame: CCTalkFrame, at now: UInt64, arrival: UInt64) {
        truth.polls.requests += 1
        if let last = lastRequestAt { truth.polls.longestGapMs = max(truth.polls.longestGapMs, Double(now - last) / 1e6) }
        lastRequestAt = now
        let handling = acceptor.handle(frame, at: now)
        guard var reply = handling.reply else { return }
        var reported = handling.reported
        if reply.header == CCTalkHeader.nak.rawValue { truth.polls.unknownHeaders += 1 }
        var corrupt = false
        let bufferPoll = frame.header == CCTalkHeader.readBufferedCredit.rawValue
        if bufferPoll {
            truth.polls.bufferPolls += 1
            let f = settings.faults
            let roll = Double.random(in: 0..<1, using: &faultRandom)
            if roll < f.lostReply {
                truth.polls.lostReplies += 1
                return
            } else if roll < f.lostReply + f.nak + f.busy {
                let nak = roll < f.lostReply + f.nak
                if nak { truth.polls.naks += 1 } else { truth.polls.busies += 1 }
                reply = CCTalkFrame(destination: reply.destination, source: reply.source,
                                    header: (nak ? CCTalkHeader.nak : .busy).rawValue)
                reported = []
            } else if roll < f.lostReply + f.nak + f.busy + f.badChecksum {
                truth.polls.badChecksums += 1
                corrupt = true
                reported = []
            }
        }
        var out = reply.encoded(settings.checksum)
        if corrupt { out[out.count - 1] ^= 0x5A }
        let deliverAt = max(arrival &+ UInt64(settings.replyMilliseconds * 1e6), lineFreeAt) &+ transit(out.count)
        lineFreeAt = deliverAt
        truth.polls.replies += 1
        let intact = bufferPoll && !corrupt && reply.header == CCTalkHeader.reply.rawValue
        outgoing.append(Outgoing(deliverAt: deliverAt, bytes: out, reported: reported, resets: handling.resets, readsBuffer: intact))
    }

    /// Queues a hopper's reply to `frame`: none while it has no power; refused, or lost on the
    /// line, as its faults say.
    private func answerHopper(_ index: Int, _ frame: CCTalkFrame, at now: UInt64, arrival: UInt64) {
        watchExchanges(frame)
        let faults = settings.hoppers[index].faults
        let roll = faults.lostReply + faults.nak + faults.busy > 0 ? Double.random(in: 0..<1, using: &faultRandom) : 1
        var reply: CCTalkFrame?
        if roll < faults.nak + faults.busy, hoppers[index].poweredOffUntil == nil {
            // Refused: it did nothing of the request.
            let nak = roll < faults.nak
            if nak { hopperLine[index].naks += 1 } else { hopperLine[index].busies += 1 }
            reply = CCTalkFrame(destination: frame.source ?? CCTalkFrame.hostAddress, source: frame.destination,
                                header: (nak ? CCTalkHeader.nak : .busy).rawValue)
        } else {
            playHopper(index) { reply = $0.handle(frame, at: now) }
            if let done = reply, roll < faults.nak + faults.busy + faults.lostReply {
                // It acted; its reply never reaches the host.
                hopperLine[index].lostReplies += 1
                if frame.header == CCTalkHeader.resetDevice.rawValue, done.header == CCTalkHeader.reply.rawValue {
                    playHopper(index) { $0.restart(at: now) }
                }
                return
            }
        }
        guard let reply else { return }
        let out = reply.encoded(settings.checksum)
        let deliverAt = max(arrival &+ UInt64(settings.replyMilliseconds * 1e6), lineFreeAt) &+ transit(out.count)
        lineFreeAt = deliverAt
        let resets = frame.header == CCTalkHeader.resetDevice.rawValue && reply.header == CCTalkHeader.reply.rawValue
        outgoing.append(Outgoing(deliverAt: deliverAt, bytes: out, reported: [], resets: resets, hopper: index))
    }

    // MARK: Hoppers

    /// The host moves on from an armed hopper's last dispense: it is exchanged then, when
    /// nothing of it is waiting to be recorded (the next step's journal, or the settlement,
    /// carried its account).
    private func watchExchanges(_ frame: CCTalkFrame) {
        for index in hoppers.indices {
            switch exchange[index] {
            case .waiting(let after):
                let own = hoppers[index].payouts
                if own.count >= after, own.last?.ended != nil { exchange[index] = .armed(disables: 0) } else { continue }
            case .armed, .done:
                break
            }
            guard case .armed(let disables) = exchange[index], hoppers[index].payout == nil else { continue }
            let toIt = frame.destination == settings.hoppers[index].address
            if frame.header == CCTalkHeader.dispenseHopperCoins.rawValue, !toIt {
                exchangeHopper(index)
            } else if toIt, frame.header == CCTalkHeader.enableHopper.rawValue, frame.data.first != 0xA5 {
                if disables + 1 >= 2 { exchangeHopper(index) } else { exchange[index] = .armed(disables: disables + 1) }
            }
        }
    }

    private func exchangeHopper(_ index: Int) {
        playHopper(index) { $0.exchange() }
        exchange[index] = .done
    }

    /// Every hopper plays what is due by `now`: coins drop, payouts stop short, power goes and
    /// comes back.
    private func advanceHoppers(to now: UInt64) {
        for index in hoppers.indices { playHopper(index) { $0.advance(to: now) } }
    }

    /// Changes a hopper; if that cut its power, its replies still on their way die with it.
    private func playHopper(_ index: Int, _ change: (inout CCTalkHopper) -> Void) {
        let powerDowns = hoppers[index].powerDowns
        change(&hoppers[index])
        if hoppers[index].powerDowns != powerDowns { dropOutgoing { $0.hopper == index } }
    }

    /// What each hopper paid, for the truth.
    private func hopperTruth() -> [CCTalkGroundTruth.Hopper] {
        zip(settings.hoppers, hoppers).enumerated().map { index, pair in
            let (scenario, hopper) = pair
            return CCTalkGroundTruth.Hopper(
                address: scenario.address, coinId: scenario.coin.text, valueMinor: scenario.valueMinor, serialNumber: scenario.serialNumber,
                coinsStart: scenario.coins, coinsEnd: hopper.level, paidCoins: hopper.paidCoins, paidMinor: Int64(hopper.paidCoins) * scenario.valueMinor,
                powerDowns: hopper.powerDowns, jams: hopper.jams, empties: hopper.empties,
                lostReplies: hopperLine[index].lostReplies, naks: hopperLine[index].naks, busies: hopperLine[index].busies,
                hiddenSerials: hopper.hiddenSerials, exchanges: hopper.exchanges,
                dispenses: hopper.payouts.map { payout in
                    // One still paying: what it had yet to pay counts as unpaid, so asked = paid + unpaid.
                    CCTalkGroundTruth.Dispense(counter: payout.counter, asked: payout.asked, paid: payout.paid, unpaid: payout.asked - payout.paid,
                                               ended: payout.ended?.rawValue ?? "under_way")
                })
        }
    }

    /// Writes what has crossed the line by now; a buffer reply's events are then reported.
    private func deliverOutgoing() {
        guard let terminal, connected else { return }
        let now = Instant.now.nanoseconds
        while let index = outgoing.indices.min(by: { outgoing[$0].deliverAt < outgoing[$1].deliverAt }), outgoing[index].deliverAt <= now {
            let next = outgoing.remove(at: index)
            recorder?.write(TraceEntry(tUs: Int64((now - start) / 1000), dir: "tx", bytes: next.bytes))
            guard terminal.write(next.bytes) else {
                for key in next.reported {
                    if let cause = leftInFlight.removeValue(forKey: key) { left(key, to: cause) }
                }
                continue
            }
            for key in next.reported {
                if let index = eventIndex[key], !truth.events[index].lost { truth.events[index].reported = true }
                leftInFlight[key] = nil
            }
            if next.readsBuffer, bufferFirstReadAt == nil { bufferFirstReadAt = now }
            if next.resets, let hopper = next.hopper {
                playHopper(hopper) { $0.restart(at: now) }
            } else if next.resets {
                truth.sessions.hostResets += 1
                restart()
            }
        }
    }

    /// Replies on their way (those `matching`) never get out: events that left the buffer
    /// meanwhile are lost.
    private func dropOutgoing(matching: (Outgoing) -> Bool = { _ in true }) {
        let dropped = outgoing.filter(matching)
        outgoing.removeAll(where: matching)
        for reply in dropped {
            for key in reply.reported {
                if let cause = leftInFlight.removeValue(forKey: key) { left(key, to: cause) }
            }
        }
    }

    private func transit(_ count: Int) -> UInt64 {
        scenario.firmware.baud == 0 ? 0 : UInt64(count) * 10 * 1_000_000_000 / UInt64(scenario.firmware.baud)
    }

    private func finish() {
        dropOutgoing()
        advanceHoppers(to: Instant.now.nanoseconds)
        truth.hoppers = hopperTruth()
        truth.durationS = Double(Instant.now.nanoseconds - start) / 1e9
    }

}
