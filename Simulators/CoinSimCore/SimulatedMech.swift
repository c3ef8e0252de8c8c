import CoinMechModel
import CoinMechSerial

/// A raw-sensor serial coin mech's behaviour without a line: the host's bytes in, sentences out
/// when their last byte has crossed the line, coins in from a scenario or a recorded trace, and
/// the ground truth kept as it goes. `MechSimulator` puts it on a pty; tests drive it on
/// simulated time.
///
/// The mech it plays: each reading waits for the host's answer until its deadline; an accepted
/// coin falls from the gate to the cash-box sensor (`store_ms`) and is confirmed (`$CMC`), or
/// bounces back out; every coin's fate goes into a journal that answers the host's queries
/// (`$CMQ`) by boot number, across power cycles. Bytes take their time on the line at the
/// scenario's baud rate, both ways.
///
/// Time is what the caller says it is: every entry point takes `now` (CLOCK_MONOTONIC ns), and
/// `nextWake` says when the model next has something to do. What the line must do is left in
/// `effects`, in order, for the caller to carry out.
public struct SimulatedMech: Sendable {
    /// What the mech asks of the line that carries it.
    public enum Effect: Sendable, Hashable {
        /// Give these bytes to the host now: their last byte has crossed the line.
        case write([UInt8])
        /// Add this to the session's trace.
        case record(TraceEntry)
        /// Pull the device away: the host sees a hang-up and the device's path goes.
        case unplug
        /// Offer a new device, at a new path, after an unplug.
        case plugIn
    }

    private enum Script {
        case scenario(Scenario, InsertionGenerator)
        case trace([TraceEntry])
    }

    /// A reading waiting for the host's answer.
    private struct Pending {
        var coinIndex: Int
        var sentAt: UInt64
        var deadline: UInt64
    }

    /// An accepted coin on its way from the gate to the cash box.
    private struct InFlight {
        var coinIndex: Int
        var boot: UInt64
        var storeAt: UInt64
        var bounces: Bool
        var losesConfirmation: Bool
        /// The mech loses power before the coin gets there.
        var losesPower: Bool
    }

    /// Bytes on their way to the host: delivered when their last byte has crossed the line.
    private struct Outgoing {
        var deliverAt: UInt64
        var bytes: [UInt8]
        var insertion: InsertionContext?
    }

    private struct InsertionContext {
        var number: Int
        var kind: String
        var currency: String?
        var value: Int64?
        var duplicated: Bool
    }

    /// What the caller must do, in order; `takeEffects` empties it.
    public private(set) var effects: [Effect] = []
    /// The session is over: the caller stops and asks for `finish`.
    public private(set) var isFinished = false
    /// The device is away (an unplug fault): there is no line until the next `.plugIn`.
    public var isUnplugged: Bool { unpluggedUntil != nil }

    private let options: SimulatorOptions
    private var script: Script
    private var truth: GroundTruth
    private let deadlineNanoseconds: UInt64
    private let firmware: Scenario.Firmware
    /// Chance draws for the mech's faults, apart from the insertions' own generator.
    private var faultRandom: SplitMix64
    private let faults: Scenario.Faults
    private let start: UInt64
    /// The latest time a caller gave.
    private var now: UInt64

    private var connected = false
    private var inhibited = false
    private var hostParser = FrameParser()
    /// Parses what the device itself writes, so replayed traces are tracked like scenarios.
    private var ownParser = FrameParser()
    private var epoch = 0
    private var boot: UInt64
    private var devseq: UInt64 = 0
    private var pending: [UInt64: Pending] = [:]
    /// Readings of this epoch already decided or expired, for late and duplicate answers.
    private var settled: [UInt64: Pending] = [:]
    private var inFlight: [UInt64: InFlight] = [:]
    /// Every coin's fate, by boot and device seq: what `$CMQ` is answered from.
    private var journal: [UInt64: [UInt64: CoinFate]] = [:]
    private var outgoing: [Outgoing] = []
    /// When the mech → host line is free again, and the host → mech line.
    private var lineFreeAt: UInt64 = 0
    private var hostLineFreeAt: UInt64 = 0
    /// The mech's millisecond clock reads `(now - start) / 1e6 + clockOffset`.
    private let clockOffsetMilliseconds: UInt64
    private var latencies: [Int] = []
    private var announcePowerUp = false
    /// The mech is without power until then (after a power loss).
    private var poweredOffUntil: UInt64?
    /// The device is away until then (an unplug fault).
    private var unpluggedUntil: UInt64?
    private var disconnectedBefore: Set<Int> = []
    /// When the script acts next; nil until the host is there, and after the script's end.
    private var nextAction: UInt64?
    private var traceIndex = 0
    private var lingerUntil: UInt64?
    /// SIGTERM or SIGINT: no more insertions; the coins already in the mech finish (their
    /// answers, their way to the cash box, their confirmations), for at most 3 s.
    private var stoppingSince: UInt64?
    private let hostDeadline: UInt64?

    /// `nextAction` in lockstep mode while a reading waits for its answer.
    private static let awaitingDecision = UInt64.max

    public init(scenario: Scenario, options: SimulatorOptions = SimulatorOptions(), start: UInt64) {
        self.options = options
        script = .scenario(scenario, InsertionGenerator(scenario: scenario))
        truth = GroundTruth(scenario: scenario.name, seed: scenario.seed, deadlineMs: scenario.deadlineMilliseconds)
        deadlineNanoseconds = UInt64(scenario.deadlineMilliseconds * 1e6)
        firmware = scenario.firmware
        faults = scenario.faults
        faultRandom = SplitMix64(seed: scenario.seed ^ 0xC0FF_EE00_D15C_0B0B)
        boot = scenario.firmware.firstBoot
        clockOffsetMilliseconds = 1_000_000 + scenario.seed % 1_000_000
        self.start = start
        now = start
        hostDeadline = options.hostTimeoutSeconds > 0 ? start + UInt64(options.hostTimeoutSeconds * 1e9) : nil
        truth.mech.boots = [boot]
    }

    public init(trace: [TraceEntry], name: String, deadlineMilliseconds: Double = 50, options: SimulatorOptions = SimulatorOptions(),
                start: UInt64) {
        self.options = options
        script = .trace(trace)
        truth = GroundTruth(scenario: name, seed: 0, deadlineMs: deadlineMilliseconds)
        deadlineNanoseconds = UInt64(deadlineMilliseconds * 1e6)
        // A trace is replayed as recorded: no pacing, no confirmations of its own.
        var settings = Scenario.Firmware()
        settings.baud = 0
        settings.confirmations = false
        firmware = settings
        faults = Scenario.Faults()
        faultRandom = SplitMix64(seed: 0)
        boot = 1
        clockOffsetMilliseconds = 0
        self.start = start
        now = start
        hostDeadline = options.hostTimeoutSeconds > 0 ? start + UInt64(options.hostTimeoutSeconds * 1e9) : nil
    }

    // MARK: The caller's side

    /// Hands over what the line must do, in order.
    public mutating func takeEffects() -> [Effect] {
        defer { effects.removeAll(keepingCapacity: true) }
        return effects
    }

    /// When the model next has something to do, at the latest; something the host does may come sooner.
    public func nextWake(now: UInt64) -> UInt64 {
        var wake = now + 1_000_000_000
        if !connected && unpluggedUntil == nil { wake = now + 10_000_000 }  // a pty has no "opened" event: look again soon
        if let next = nextAction, connected { wake = min(wake, next) }
        for due in [pending.values.map(\.deadline).min(), inFlight.values.map(\.storeAt).min(), outgoing.first?.deliverAt,
                    poweredOffUntil, lingerUntil, unpluggedUntil] {
            if let due { wake = min(wake, due) }
        }
        return wake
    }

    /// A device was offered at `path` (the first, or after an unplug).
    public mutating func offered(devicePath path: String) {
        truth.connections.devicePaths.append(path)
    }

    /// SIGTERM or SIGINT came.
    public mutating func stop(at time: UInt64) {
        advanceClock(time)
        truth.ended = "signal"
        if stoppingSince == nil { stoppingSince = now }
        nextAction = nil
    }

    /// The host has the device open.
    public mutating func hostOpened(at time: UInt64) {
        advanceClock(time)
        guard !connected, unpluggedUntil == nil else { return }
        connected = true
        truth.connections.connects += 1
        record(event: "connect")
        // Give the host a moment to set the line up before the next sentence.
        let settledAt = now + UInt64(options.settleMilliseconds * 1e6)
        lineFreeAt = max(lineFreeAt, settledAt)
        if truth.connections.connects == 1 {
            nextAction = settledAt
            announcePowerUp = true
        } else if let next = nextAction {
            nextAction = max(next, settledAt)
        }
    }

    /// Nobody has the device open.
    public mutating func hostHungUp(at time: UInt64) {
        advanceClock(time)
        guard connected else { return }
        connected = false
        truth.connections.hangups += 1
        record(event: "hangup")
        // Nobody reads the line: what was on its way is lost.
        outgoing.removeAll()
        if faults.rebootWhileAwayEvery > 0, case .scenario = script,
           truth.connections.hangups % faults.rebootWhileAwayEvery == 0, poweredOffUntil == nil {
            // Power comes and goes while nobody listens: the host learns the new boot only
            // from its SESSION question at the next connect.
            truth.faultsInjected.rebootsWhileAway += 1
            record(event: "reboot_while_away")
            powerCycle(announce: false)
        }
    }

    /// The host wrote `bytes`; they were read at `time`.
    public mutating func received(_ bytes: [UInt8], at time: UInt64) {
        advanceClock(time)
        let receivedAt = now
        record(TraceEntry(tUs: Int64((receivedAt - start) / 1000), dir: "rx", bytes: bytes))
        var frames: [SerialFrame] = []
        hostParser.feed(bytes) { event in
            guard case .frame(let frame) = event else { return }  // errors are counted by the parser
            frames.append(frame)
        }
        for frame in frames {
            // Sentences written together queue on the line: each arrives after the one before.
            hostLineFreeAt = max(hostLineFreeAt, receivedAt) &+ transit(bytes: frame.bytes.count)
            let arrival = firmware.baud == 0 ? receivedAt : hostLineFreeAt
            guard poweredOffUntil == nil else { continue }  // nobody home
            switch frame {
            case .decision(let seq, let accept):
                decided(seq, accept: accept, at: arrival)
            case .inhibit(let on):
                inhibited = on
            case .query(let queriedBoot, let seq) where firmware.confirmations:
                truth.mech.queries += 1
                answerQuery(boot: queriedBoot, deviceSeq: seq)
            case .hello where firmware.confirmations:
                truth.mech.hellos += 1
                send(SerialFrame.status(.session, detail: "\(boot)").bytes)
                announceAlloy()
            default:
                truth.protocolErrors.unexpectedSentences += 1
            }
        }
        truth.protocolErrors.frames = hostParser.errors
    }

    /// Does what is due by `time`: deadlines, coins reaching the cash box, power coming back,
    /// bytes crossing the line, the script's next insertion, the end of the session.
    public mutating func advance(to time: UInt64) {
        advanceClock(time)
        guard !isFinished else { return }
        if let since = stoppingSince {
            // Then it stays a while for the host's queries (the linger), as at a scenario's end.
            let quiet = pending.isEmpty && inFlight.isEmpty && outgoing.isEmpty && poweredOffUntil == nil
            if !connected || now &- since > 3_000_000_000 + UInt64(options.lingerMilliseconds * 1e6) { return end() }
            if quiet {
                if lingerUntil == nil { lingerUntil = now + UInt64(options.lingerMilliseconds * 1e6) }
                if now >= lingerUntil! { return end() }
            }
        }
        if !connected, unpluggedUntil == nil, truth.connections.connects == 0, let hostDeadline, now > hostDeadline {
            truth.ended = "host_timeout"
            return end()
        }

        expireDeadlines()
        storeCoinsInFlight()
        if let off = poweredOffUntil, now >= off { powerBackOn() }
        if let away = unpluggedUntil, now >= away { plugBackIn() }
        if connected { deliverOutgoing() }
        if options.lockstep, nextAction == Self.awaitingDecision, pending.isEmpty, outgoing.isEmpty { nextAction = now }

        guard connected, poweredOffUntil == nil, stoppingSince == nil, let due = nextAction, now >= due else {
            if nextAction == nil, pending.isEmpty, inFlight.isEmpty, outgoing.isEmpty, poweredOffUntil == nil, truth.connections.connects > 0 {
                if let linger = lingerUntil {
                    if now >= linger { end() }
                } else {
                    lingerUntil = now + UInt64(options.lingerMilliseconds * 1e6)
                }
            }
            return
        }
        if announcePowerUp, case .scenario = script {
            // After the settle time, so a host that flushes its input on open still hears it.
            announcePowerUp = false
            send(SerialFrame.status(.powerUp, detail: firmware.confirmations ? "\(boot)" : nil).bytes)
            announceAlloy()
        }
        switch script {
        case .scenario(let scenario, var generator):
            let done = playInsertion(scenario, &generator)
            if done {
                nextAction = nil
            } else if poweredOffUntil != nil {
                nextAction = poweredOffUntil
            } else if options.lockstep {
                nextAction = Self.awaitingDecision
            } else {
                nextAction = now + UInt64(generator.gap(after: truth.sent.insertions) * 1e9)
            }
            script = .scenario(scenario, generator)
        case .trace(let entries):
            nextAction = playTrace(entries)
        }
        if connected { deliverOutgoing() }
    }

    /// The session's ground truth, with what is still waiting returned.
    public mutating func finish(at time: UInt64) -> GroundTruth {
        advanceClock(time)
        for (_, waiting) in pending { expire(waiting) }
        pending.removeAll()
        truth.latencyUs = GroundTruth.Latency(samples: latencies)
        truth.durationS = Double(now - start) / 1e9
        truth.protocolErrors.frames = hostParser.errors
        return truth
    }

    private mutating func advanceClock(_ time: UInt64) { now = max(now, time) }

    private mutating func end() { isFinished = true }

    // MARK: Scenario

    /// Makes the next insertion; returns true when the scenario has no more.
    private mutating func playInsertion(_ scenario: Scenario, _ generator: inout InsertionGenerator) -> Bool {
        let number = truth.sent.insertions + 1
        guard scenario.coins == 0 || number <= scenario.coins else { return true }
        let faults = scenario.faults
        if faults.disconnectAt.contains(number) && !disconnectedBefore.contains(number) {
            // Pull the device away; this insertion waits until a host has the new device open.
            disconnectedBefore.insert(number)
            unplug(milliseconds: faults.disconnectMilliseconds)
            return false
        }
        if faults.powerCycleAt.contains(number) && !inFlight.isEmpty {
            // A clean power cycle waits for the coins on their way to the cash box.
            return false
        }
        if faults.powerCycleAt.contains(number) {
            truth.faultsInjected.powerCycles += 1
            powerCycle(announce: true)
        }
        if faults.jamAt.contains(number) {
            truth.faultsInjected.jams += 1
            send(SerialFrame.status(.jam, detail: "cleared").bytes)
        }
        let insertion = generator.next()
        truth.sent.insertions += 1
        truth.sent.byKind[insertion.kind.description, default: 0] += 1
        let credit = insertion.kind.creditableValue
        if inhibited {
            appendCoin(insertion, devseq: 0, outcome: "inhibited")
            truth.outcomes.inhibited += 1
            return false
        }
        if generator.chance(faults.garbage) {
            let junk = generator.garbage(faults.garbageBytes)
            truth.faultsInjected.garbageBursts += 1
            truth.faultsInjected.garbageBytes += junk.count
            send(junk)
        }
        let seq = devseq + 1
        let reading = SensorReading(deviceSeq: seq, diameterMM: insertion.diameterMM, weightG: insertion.weightG, thicknessMM: insertion.thicknessMM,
                                    alloy: insertion.alloy)
        let sentence = SerialFrame.reading(reading).bytes
        if generator.chance(faults.badChecksum) {
            devseq = seq
            truth.faultsInjected.badChecksums += 1
            var broken = sentence
            broken[broken.count - 3] = broken[broken.count - 3] == UInt8(ascii: "0") ? UInt8(ascii: "1") : UInt8(ascii: "0")
            corrupted(insertion, seq, broken)
        } else if generator.chance(faults.truncated) {
            devseq = seq
            truth.faultsInjected.truncated += 1
            corrupted(insertion, seq, Array(sentence.prefix(sentence.count / 2)))
        } else if generator.chance(faults.overlong) {
            devseq = seq
            truth.faultsInjected.overlong += 1
            corrupted(insertion, seq, Array("$CMR,\(seq),\(String(repeating: "9", count: 120))*00\r\n".utf8))
        } else {
            devseq = seq
            let duplicated = generator.chance(faults.duplicate)
            let context = InsertionContext(number: number, kind: insertion.kind.description, currency: credit?.currency,
                                           value: credit?.valueMinor, duplicated: duplicated)
            if let credit { truth.creditableValue[credit.currency, default: 0] += credit.valueMinor }
            sendReading(reading, context: context)
            if duplicated {
                truth.faultsInjected.duplicates += 1
                sendReading(reading, context: context)
            } else if faults.falseDuplicateAt.contains(number) {
                // Measured again: the same number, other figures. Still one coin, which the
                // first answer decides; the host's answer to this one comes too late to matter.
                truth.faultsInjected.falseDuplicates += 1
                var again = reading
                again.weightG += 0.05
                sendReading(again, context: context)
            }
        }
        return false
    }

    /// A mech with an eddy-current sensor names its two frequencies after it powers up and when
    /// the host says hello (`$CMS,ALLOY,<low_hz>/<high_hz>`).
    private mutating func announceAlloy() {
        guard case .scenario(let scenario, _) = script, let alloy = scenario.alloy else { return }
        send(SerialFrame.status(.alloy, detail: "\(Int(alloy.sensor.lowHz))/\(Int(alloy.sensor.highHz))").bytes)
    }

    /// Queues a reading, stamped with the mech's clock at the moment its last byte leaves.
    private mutating func sendReading(_ reading: SensorReading, context: InsertionContext) {
        var stamped = reading
        if firmware.clock { stamped.mechMilliseconds = 0 }
        let deliverAt = deliveryTime(for: SerialFrame.reading(stamped).bytes.count)
        if firmware.clock { stamped.mechMilliseconds = mechMilliseconds(at: deliverAt) }
        enqueue(SerialFrame.reading(stamped).bytes, deliverAt: deliverAt, insertion: context)
    }

    private mutating func corrupted(_ insertion: Insertion, _ seq: UInt64, _ bytes: [UInt8]) {
        appendCoin(insertion, devseq: seq, outcome: "corrupted")
        truth.outcomes.corrupted += 1
        journal[boot, default: [:]][seq] = .returned
        send(bytes)
    }

    private mutating func appendCoin(_ insertion: Insertion, devseq: UInt64, outcome: String) {
        let credit = insertion.kind.creditableValue
        var coin = GroundTruth.Coin(
            insertion: insertion.number, epoch: epoch, devseq: devseq, kind: insertion.kind.description,
            currency: credit?.currency, valueMinor: credit?.valueMinor, outcome: outcome)
        coin.boot = boot
        coin.fate = "returned"
        truth.coins.append(coin)
    }

    // MARK: Replay

    /// Plays the trace's entries that are due; returns when the next one is, nil at its end.
    private mutating func playTrace(_ entries: [TraceEntry]) -> UInt64? {
        while traceIndex < entries.count {
            let entry = entries[traceIndex]
            let due = start + UInt64(max(0, entry.tUs)) * 1000
            if now < due { return due }
            traceIndex += 1
            switch (entry.dir, entry.event) {
            case ("tx", _):
                send(entry.bytes)
            case ("event", "disconnect"):
                unplug(milliseconds: entry.ms ?? 500)
                return now
            default:
                break  // received bytes and other events are not replayed
            }
        }
        return nil
    }

    // MARK: The line

    /// Queues bytes for the host, behind what is already on the line.
    private mutating func send(_ bytes: [UInt8]) {
        enqueue(bytes, deliverAt: deliveryTime(for: bytes.count), insertion: nil)
    }

    /// When `count` bytes written now would have crossed the line.
    private func deliveryTime(for count: Int) -> UInt64 {
        max(now, lineFreeAt) &+ transit(bytes: count)
    }

    private mutating func enqueue(_ bytes: [UInt8], deliverAt: UInt64, insertion: InsertionContext?) {
        lineFreeAt = max(lineFreeAt, deliverAt)
        outgoing.append(Outgoing(deliverAt: deliverAt, bytes: bytes, insertion: insertion))
        if firmware.baud == 0, connected { deliverOutgoing() }
    }

    private func transit(bytes: Int) -> UInt64 {
        firmware.baud == 0 ? 0 : UInt64(bytes) * 10 * 1_000_000_000 / UInt64(firmware.baud)
    }

    private func mechMilliseconds(at time: UInt64) -> UInt64 { (time &- start) / 1_000_000 + clockOffsetMilliseconds }

    /// Hands over what has crossed the line by now, and tracks the readings among it.
    private mutating func deliverOutgoing() {
        while let next = outgoing.first, next.deliverAt <= now {
            outgoing.removeFirst()
            record(TraceEntry(tUs: Int64((now - start) / 1000), dir: "tx", bytes: next.bytes))
            effects.append(.write(next.bytes))
            track(next.bytes, sentAt: now, insertion: next.insertion)
        }
    }

    private mutating func track(_ bytes: [UInt8], sentAt: UInt64, insertion: InsertionContext?) {
        var frames: [SerialFrame] = []
        ownParser.feed(bytes) { event in
            guard case .frame(let frame) = event else { return }
            frames.append(frame)
        }
        for frame in frames {
            switch frame {
            case .reading(let reading):
                let seq = reading.deviceSeq
                truth.sent.readings += 1
                devseq = max(devseq, seq)
                if pending[seq] == nil && settled[seq] == nil && inFlight[seq] == nil {
                    var coin = GroundTruth.Coin(
                        insertion: insertion?.number ?? truth.coins.count + 1, epoch: epoch, devseq: seq,
                        kind: insertion?.kind ?? "replayed", currency: insertion?.currency, valueMinor: insertion?.value,
                        outcome: "pending", duplicated: (insertion?.duplicated ?? false) ? true : nil)
                    coin.boot = boot
                    truth.coins.append(coin)
                    pending[seq] = Pending(coinIndex: truth.coins.count - 1, sentAt: sentAt, deadline: sentAt + deadlineNanoseconds)
                }
            case .status(.powerUp, _):
                if case .trace = script {
                    // A replayed power-up: whatever was pending is returned, numbering starts again.
                    for (_, waiting) in pending { expire(waiting) }
                    pending.removeAll()
                    settled.removeAll()
                    if truth.connections.connects > 1 || truth.sent.readings > 0 { epoch += 1 }
                    devseq = 0
                }
            default:
                break
            }
        }
    }

    // MARK: Coins

    private mutating func decided(_ seq: UInt64, accept: Bool, at time: UInt64) {
        if let waiting = pending.removeValue(forKey: seq) {
            let latency = Int((time - waiting.sentAt) / 1000)
            latencies.append(latency)
            truth.coins[waiting.coinIndex].latencyUs = latency
            if time <= waiting.deadline {
                truth.coins[waiting.coinIndex].outcome = accept ? "accept" : "return"
                if accept {
                    truth.outcomes.accepted += 1
                    if let currency = truth.coins[waiting.coinIndex].currency, let value = truth.coins[waiting.coinIndex].valueMinor {
                        truth.acceptedValue[currency, default: 0] += value
                    } else {
                        truth.acceptedValue["(not creditable)", default: 0] += 1
                    }
                    let number = truth.coins[waiting.coinIndex].insertion
                    let jitter = 0.75 + 0.5 * Double.random(in: 0..<1, using: &faultRandom)
                    inFlight[seq] = InFlight(
                        coinIndex: waiting.coinIndex, boot: boot, storeAt: time &+ UInt64(firmware.storeMilliseconds * jitter * 1e6),
                        bounces: faultRandom.chance(faults.bounce), losesConfirmation: faultRandom.chance(faults.lostConfirmation),
                        losesPower: faults.powerLossAt.contains(number))
                } else {
                    truth.outcomes.returned += 1
                    truth.coins[waiting.coinIndex].fate = "returned"
                    journal[boot, default: [:]][seq] = .returned
                }
            } else {
                markMissed(waiting.coinIndex, late: accept ? "A" : "R")
                journal[boot, default: [:]][seq] = .returned
                if accept { confirm(seq, .returned) }
            }
            settled[seq] = waiting
        } else if let waiting = settled[seq] {
            let index = waiting.coinIndex
            if truth.coins[index].outcome == "deadline_miss" && truth.coins[index].lateDecision == nil {
                // The first answer, after the mech had already returned the coin.
                truth.coins[index].lateDecision = accept ? "A" : "R"
                let latency = Int((time - waiting.sentAt) / 1000)
                latencies.append(latency)
                truth.coins[index].latencyUs = latency
                if accept { confirm(seq, .returned) }
            } else {
                truth.protocolErrors.duplicateDecisions += 1
            }
        } else {
            truth.protocolErrors.unknownDevseq += 1
        }
    }

    /// Accepted coins reach the cash box (or bounce back) once their time has come.
    private mutating func storeCoinsInFlight() {
        for (seq, coin) in inFlight.sorted(by: { $0.value.storeAt < $1.value.storeAt }) where coin.storeAt <= now {
            guard inFlight[seq] != nil else { continue }  // settled by a power loss meanwhile
            if coin.losesPower {
                truth.faultsInjected.powerCycles += 1
                powerCycle(announce: false)
                poweredOffUntil = now &+ 300_000_000
                continue
            }
            inFlight[seq] = nil
            let index = coin.coinIndex
            if coin.bounces {
                truth.outcomes.bounced += 1
                settle(index, fate: .returned, seq: seq, boot: coin.boot)
                truth.coins[index].confirmation = "R"
                confirm(seq, .returned)
            } else {
                truth.outcomes.stored += 1
                settle(index, fate: .stored, seq: seq, boot: coin.boot)
                if coin.losesConfirmation && firmware.confirmations {
                    truth.mech.confirmationsLost += 1
                    truth.coins[index].confirmation = "lost"
                } else {
                    truth.coins[index].confirmation = firmware.confirmations ? "S" : nil
                    confirm(seq, .stored)
                }
            }
        }
    }

    private mutating func settle(_ index: Int, fate: CoinFate, seq: UInt64, boot: UInt64) {
        truth.coins[index].fate = fate == .stored ? "stored" : "returned"
        journal[boot, default: [:]][seq] = fate
        if fate == .stored, let currency = truth.coins[index].currency, let value = truth.coins[index].valueMinor {
            truth.storedValue[currency, default: 0] += value
        }
    }

    private mutating func confirm(_ seq: UInt64, _ fate: CoinFate) {
        guard firmware.confirmations else { return }
        truth.mech.confirmationsSent += 1
        send(SerialFrame.confirmation(deviceSeq: seq, fate: fate).bytes)
    }

    private mutating func answerQuery(boot queried: UInt64, deviceSeq seq: UInt64) {
        if queried == boot, inFlight[seq] != nil { return }  // still on its way: the host asks again
        if queried == boot, pending[seq] != nil { return }
        let fate = journal[queried]?[seq] ?? .unknown
        truth.mech.journalAnswers += 1
        send(SerialFrame.journal(boot: queried, deviceSeq: seq, fate: fate).bytes)
    }

    /// The mech restarts: readings waiting for an answer are returned, coins on their way to
    /// the cash box end where chance puts them with no record (a clean cycle has none), and
    /// numbering starts again under the next boot number.
    private mutating func powerCycle(announce: Bool) {
        for (_, waiting) in pending {
            expire(waiting)
            journal[boot, default: [:]][truth.coins[waiting.coinIndex].devseq] = .returned
        }
        pending.removeAll()
        settled.removeAll()
        for (seq, coin) in inFlight {
            truth.outcomes.powerLost += 1
            let fellIn = faultRandom.chance(0.5)
            settle(coin.coinIndex, fate: fellIn ? .stored : .returned, seq: seq, boot: coin.boot)
            journal[coin.boot, default: [:]][seq] = .unknown
            truth.coins[coin.coinIndex].confirmation = "power_lost"
        }
        inFlight.removeAll()
        outgoing.removeAll()
        epoch += 1
        boot += 1
        truth.mech.boots.append(boot)
        devseq = 0
        if announce {
            send(SerialFrame.status(.powerUp, detail: firmware.confirmations ? "\(boot)" : nil).bytes)
            announceAlloy()
        }
    }

    private mutating func powerBackOn() {
        poweredOffUntil = nil
        lineFreeAt = max(lineFreeAt, now)
        send(SerialFrame.status(.powerUp, detail: firmware.confirmations ? "\(boot)" : nil).bytes)
        announceAlloy()
    }

    private mutating func expireDeadlines() {
        for (seq, waiting) in pending where waiting.deadline < now {
            pending[seq] = nil
            expire(waiting)
            journal[boot, default: [:]][seq] = .returned
            settled[seq] = waiting
        }
    }

    private mutating func expire(_ waiting: Pending) {
        markMissed(waiting.coinIndex, late: nil)
        truth.coins[waiting.coinIndex].fate = "returned"
    }

    private mutating func markMissed(_ index: Int, late: String?) {
        truth.coins[index].outcome = "deadline_miss"
        truth.coins[index].lateDecision = late
        truth.coins[index].fate = "returned"
        truth.outcomes.deadlineMisses += 1
    }

    // MARK: Connection

    /// Pulls the device away (the host sees a hang-up), then offers a new one after `milliseconds`.
    /// Coins on their way to the cash box still get there; the host asks about them later.
    private mutating func unplug(milliseconds: Double) {
        truth.faultsInjected.disconnects += 1
        record(event: "disconnect", ms: milliseconds)
        effects.append(.unplug)
        if connected {
            connected = false
            truth.connections.hangups += 1
        }
        outgoing.removeAll()
        for (_, waiting) in pending { expire(waiting) }
        for (seq, waiting) in pending {
            journal[boot, default: [:]][seq] = .returned
            settled[seq] = waiting
        }
        pending.removeAll()
        unpluggedUntil = now + UInt64(milliseconds * 1e6)
    }

    /// The device comes back; what the mech said while away went nowhere.
    private mutating func plugBackIn() {
        unpluggedUntil = nil
        outgoing.removeAll()
        effects.append(.plugIn)
    }

    private mutating func record(event: String, ms: Double? = nil) {
        record(TraceEntry(tUs: Int64((now - start) / 1000), event: event, ms: ms))
    }

    private mutating func record(_ entry: TraceEntry) { effects.append(.record(entry)) }
}
