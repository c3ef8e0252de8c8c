import CLinux
import CoinMechSerial
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Plays the device side of the raw-sensor serial protocol over a pseudo-terminal, from a
/// scenario or a recorded trace, and reports the ground truth.
///
/// Single-threaded: one `ppoll` loop over the pty, a signalfd for SIGTERM/SIGINT, and the
/// next due time (insertion or decision deadline).
public final class MechSimulator {
    public struct Options: Sendable {
        /// Keep a symlink to the device end here (updated after each reconnect).
        public var linkPath: String?
        /// Record the session to this frame log.
        public var recordPath: String?
        /// Wait this long after the last deadline for late decisions.
        public var lingerMilliseconds = 200.0
        /// Give up if no host opens the device within this time (0: wait forever).
        public var hostTimeoutSeconds = 0.0
        /// Wait between the host opening the device and the first insertion.
        public var settleMilliseconds = 100.0
        /// Insert the next coin as soon as the previous reading is answered (or its deadline
        /// passes) instead of at the scenario's rate: as fast as the protocol allows.
        public var lockstep = false

        public init() {}
    }

    private enum Script {
        case scenario(Scenario, InsertionGenerator)
        case trace([TraceEntry])
    }

    private struct Pending {
        var coinIndex: Int
        var sentAt: UInt64
        var deadline: UInt64
    }

    private let options: Options
    private var script: Script
    private let announce: @Sendable (String) -> Void
    private var truth: GroundTruth
    private let deadlineNanoseconds: UInt64

    private var terminal: PseudoTerminal?
    private var connected = false
    private var inhibited = false
    private var hostParser = FrameParser()
    /// Parses what the device itself writes, so replayed traces are tracked like scenarios.
    private var ownParser = FrameParser()
    private var epoch = 0
    private var devseq: UInt64 = 0
    private var pending: [UInt64: Pending] = [:]
    /// Readings of this epoch already decided or expired, for late and duplicate answers.
    private var settled: [UInt64: Pending] = [:]
    private var latencies: [Int] = []
    private var currentInsertion: (number: Int, kind: String, currency: String?, value: Int64?, duplicated: Bool)?
    private var recorder: TraceWriter?
    private var announcePowerUp = false
    private var disconnectedBefore: Set<Int> = []
    private let start: UInt64

    public init(scenario: Scenario, options: Options = Options(), announce: @escaping @Sendable (String) -> Void) {
        self.options = options
        script = .scenario(scenario, InsertionGenerator(scenario: scenario))
        self.announce = announce
        truth = GroundTruth(scenario: scenario.name, seed: scenario.seed, deadlineMs: scenario.deadlineMilliseconds)
        deadlineNanoseconds = UInt64(scenario.deadlineMilliseconds * 1e6)
        start = Self.now()
    }

    public init(trace: [TraceEntry], name: String, deadlineMilliseconds: Double = 50, options: Options = Options(),
                announce: @escaping @Sendable (String) -> Void) {
        self.options = options
        script = .trace(trace)
        self.announce = announce
        truth = GroundTruth(scenario: name, seed: 0, deadlineMs: deadlineMilliseconds)
        deadlineNanoseconds = UInt64(deadlineMilliseconds * 1e6)
        start = Self.now()
    }

    /// Runs the session to its end (or SIGTERM/SIGINT) and returns the ground truth.
    public func run() throws(SimulatorError) -> GroundTruth {
        var signals = sigset_t()
        sigemptyset(&signals)
        sigaddset(&signals, SIGTERM)
        sigaddset(&signals, SIGINT)
        pthread_sigmask(SIG_BLOCK, &signals, nil)
        let signalFD = cm_signalfd(&signals)
        guard signalFD >= 0 else { throw .system("signalfd", errno) }
        defer { close(signalFD) }
        if let path = options.recordPath { recorder = try TraceWriter(path: path) }
        try openTerminal()

        var nextAction: UInt64? = nil  // when the script acts next; nil until the host is there
        var traceIndex = 0
        var lingerUntil: UInt64? = nil
        let hostDeadline = options.hostTimeoutSeconds > 0 ? start + UInt64(options.hostTimeoutSeconds * 1e9) : nil

        loop: while true {
            let now = Self.now()
            var wake = now + 1_000_000_000
            if !connected { wake = now + 10_000_000 }  // a pty has no "opened" event: look again soon
            if let next = nextAction, connected { wake = min(wake, next) }
            if let first = pending.values.map(\.deadline).min() { wake = min(wake, first) }
            if let linger = lingerUntil { wake = min(wake, linger) }
            var timeout = timespec(tv_sec: Int(wake > now ? (wake - now) / 1_000_000_000 : 0),
                                   tv_nsec: Int(wake > now ? (wake - now) % 1_000_000_000 : 0))
            var fds = [pollfd(fd: terminal!.master, events: Int16(POLLIN), revents: 0),
                       pollfd(fd: signalFD, events: Int16(POLLIN), revents: 0)]
            let ready = cm_ppoll(&fds, 2, &timeout)
            if ready < 0 && errno != EINTR { throw .system("ppoll", errno) }

            if fds[1].revents != 0 {
                truth.ended = "signal"
                break loop
            }
            let master = fds[0].revents
            if master & Int16(POLLIN) != 0 { readFromHost() }
            if master & Int16(POLLHUP) != 0 && master & Int16(POLLIN) == 0 {
                if connected {
                    connected = false
                    truth.connections.hangups += 1
                    record(event: "hangup")
                }
                // Hang-up is reported at once on every poll while nobody has the device open.
                usleep(5_000)
            } else if !connected && ready >= 0 && master & Int16(POLLHUP) == 0 {
                connected = true
                truth.connections.connects += 1
                record(event: "connect")
                // Give the host a moment to set the line up before the next sentence.
                let settled = Self.now() + UInt64(options.settleMilliseconds * 1e6)
                if truth.connections.connects == 1 {
                    nextAction = settled
                    announcePowerUp = true
                } else if let next = nextAction {
                    nextAction = max(next, settled)
                }
            }
            if !connected, truth.connections.connects == 0, let hostDeadline, Self.now() > hostDeadline {
                truth.ended = "host_timeout"
                break loop
            }

            expireDeadlines()
            if options.lockstep, nextAction == Self.awaitingDecision, pending.isEmpty { nextAction = Self.now() }

            guard connected, let due = nextAction, Self.now() >= due else {
                if nextAction == nil, pending.isEmpty, truth.connections.connects > 0 {
                    if let linger = lingerUntil {
                        if Self.now() >= linger { break loop }
                    } else {
                        lingerUntil = Self.now() + UInt64(options.lingerMilliseconds * 1e6)
                    }
                }
                continue
            }
            if announcePowerUp, case .scenario = script {
                // After the settle time, so a host that flushes its input on open still hears it.
                announcePowerUp = false
                send(SerialFrame.status(.powerUp, detail: nil).bytes)
            }
            switch script {
            case .scenario(let scenario, var generator):
                let done = try playInsertion(scenario, &generator)
                script = .scenario(scenario, generator)
                if done {
                    nextAction = nil
                } else if options.lockstep {
                    nextAction = Self.awaitingDecision
                } else {
                    let gap = generator.gap(after: truth.sent.insertions)
                    script = .scenario(scenario, generator)
                    nextAction = Self.now() + UInt64(gap * 1e9)
                }
            case .trace(let entries):
                nextAction = try playTrace(entries, &traceIndex)
            }
        }
        finish()
        return truth
    }

    // MARK: Scenario

    /// Makes the next insertion; returns true when the scenario has no more.
    private func playInsertion(_ scenario: Scenario, _ generator: inout InsertionGenerator) throws(SimulatorError) -> Bool {
        let number = truth.sent.insertions + 1
        guard scenario.coins == 0 || number <= scenario.coins else { return true }
        let faults = scenario.faults
        if faults.disconnectAt.contains(number) && !disconnectedBefore.contains(number) {
            // Pull the device away; this insertion waits until a host has the new device open.
            disconnectedBefore.insert(number)
            try disconnect(milliseconds: faults.disconnectMilliseconds)
            return false
        }
        if faults.powerCycleAt.contains(number) {
            truth.faultsInjected.powerCycles += 1
            send(SerialFrame.status(.powerUp, detail: nil).bytes)
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
        let sentence = SerialFrame.reading(deviceSeq: seq, diameterMM: insertion.diameterMM, weightG: insertion.weightG,
                                           thicknessMM: insertion.thicknessMM).bytes
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
            let duplicated = generator.chance(faults.duplicate)
            currentInsertion = (number, insertion.kind.description, credit?.currency, credit?.valueMinor, duplicated)
            if let credit { truth.creditableValue[credit.currency, default: 0] += credit.valueMinor }
            send(sentence)
            if duplicated {
                truth.faultsInjected.duplicates += 1
                send(sentence)
            }
            currentInsertion = nil
        }
        return false
    }

    private func corrupted(_ insertion: Insertion, _ seq: UInt64, _ bytes: [UInt8]) {
        appendCoin(insertion, devseq: seq, outcome: "corrupted")
        truth.outcomes.corrupted += 1
        send(bytes)
    }

    private func appendCoin(_ insertion: Insertion, devseq: UInt64, outcome: String) {
        let credit = insertion.kind.creditableValue
        truth.coins.append(GroundTruth.Coin(
            insertion: insertion.number, epoch: epoch, devseq: devseq, kind: insertion.kind.description,
            currency: credit?.currency, valueMinor: credit?.valueMinor, outcome: outcome))
    }

    // MARK: Replay

    private func playTrace(_ entries: [TraceEntry], _ index: inout Int) throws(SimulatorError) -> UInt64? {
        let base = start
        while index < entries.count {
            let entry = entries[index]
            let due = base + UInt64(max(0, entry.tUs)) * 1000
            if Self.now() < due { return due }
            index += 1
            switch (entry.dir, entry.event) {
            case ("tx", _):
                send(entry.bytes)
            case ("event", "disconnect"):
                try disconnect(milliseconds: entry.ms ?? 500)
            default:
                break  // received bytes and other events are not replayed
            }
        }
        return nil
    }

    // MARK: Wire

    /// Writes bytes to the host and tracks the readings among them.
    private func send(_ bytes: [UInt8]) {
        guard let terminal else { return }
        let sentAt = Self.now()
        record(TraceEntry(tUs: Int64((sentAt - start) / 1000), dir: "tx", bytes: bytes))
        _ = terminal.write(bytes)
        ownParser.feed(bytes) { event in
            guard case .frame(let frame) = event else { return }
            switch frame {
            case .reading(let seq, _, _, _):
                truth.sent.readings += 1
                devseq = seq
                if pending[seq] == nil && settled[seq] == nil {
                    let insertion = currentInsertion
                    truth.coins.append(GroundTruth.Coin(
                        insertion: insertion?.number ?? truth.coins.count + 1, epoch: epoch, devseq: seq,
                        kind: insertion?.kind ?? "replayed", currency: insertion?.currency, valueMinor: insertion?.value,
                        outcome: "pending", duplicated: (insertion?.duplicated ?? false) ? true : nil))
                    pending[seq] = Pending(coinIndex: truth.coins.count - 1, sentAt: sentAt, deadline: sentAt + deadlineNanoseconds)
                }
            case .status(.powerUp, _):
                // The mech restarted: whatever was pending is returned, numbering starts again.
                for (_, waiting) in pending { expire(waiting) }
                pending.removeAll()
                settled.removeAll()
                if truth.connections.connects > 1 || truth.sent.readings > 0 { epoch += 1 }
                devseq = 0
            default:
                break
            }
        }
    }

    private func readFromHost() {
        guard let terminal else { return }
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = buffer.withUnsafeMutableBytes { read(terminal.master, $0.baseAddress, $0.count) }
        guard count > 0 else { return }
        let receivedAt = Self.now()
        let bytes = Array(buffer[..<count])
        record(TraceEntry(tUs: Int64((receivedAt - start) / 1000), dir: "rx", bytes: bytes))
        hostParser.feed(bytes) { event in
            switch event {
            case .frame(.decision(let seq, let accept)):
                decided(seq, accept: accept, at: receivedAt)
            case .frame(.inhibit(let on)):
                inhibited = on
            case .frame:
                truth.protocolErrors.unexpectedSentences += 1
            case .error:
                break  // counted by the parser
            }
        }
        truth.protocolErrors.frames = hostParser.errors
    }

    private func decided(_ seq: UInt64, accept: Bool, at time: UInt64) {
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
                } else {
                    truth.outcomes.returned += 1
                }
            } else {
                markMissed(waiting.coinIndex, late: accept ? "A" : "R")
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
            } else {
                truth.protocolErrors.duplicateDecisions += 1
            }
        } else {
            truth.protocolErrors.unknownDevseq += 1
        }
    }

    private func expireDeadlines() {
        let now = Self.now()
        for (seq, waiting) in pending where waiting.deadline < now {
            pending[seq] = nil
            expire(waiting)
            settled[seq] = waiting
        }
    }

    private func expire(_ waiting: Pending) { markMissed(waiting.coinIndex, late: nil) }

    private func markMissed(_ index: Int, late: String?) {
        truth.coins[index].outcome = "deadline_miss"
        truth.coins[index].lateDecision = late
        truth.outcomes.deadlineMisses += 1
    }

    // MARK: Connection

    private func openTerminal() throws(SimulatorError) {
        let terminal = try PseudoTerminal()
        if let link = options.linkPath { try terminal.link(at: link) }
        self.terminal = terminal
        truth.connections.devicePaths.append(terminal.devicePath)
        announce(terminal.devicePath)
    }

    /// Pulls the device away (the host sees a hang-up), then offers a new one after `milliseconds`.
    private func disconnect(milliseconds: Double) throws(SimulatorError) {
        truth.faultsInjected.disconnects += 1
        record(event: "disconnect", ms: milliseconds)
        // Like a USB adapter's /dev/serial/by-id link, the link goes away with the device, so a
        // host cannot reopen the old pty number (which the kernel may give to someone else).
        if let link = options.linkPath { unlink(link) }
        terminal = nil
        if connected {
            connected = false
            truth.connections.hangups += 1
        }
        for (_, waiting) in pending { expire(waiting) }
        pending.removeAll()
        usleep(useconds_t(milliseconds * 1000))
        try openTerminal()
    }

    private func finish() {
        for (_, waiting) in pending { expire(waiting) }
        pending.removeAll()
        truth.latencyUs = GroundTruth.Latency(samples: latencies)
        truth.durationS = Double(Self.now() - start) / 1e9
        truth.protocolErrors.frames = hostParser.errors
    }

    private func record(event: String, ms: Double? = nil) {
        record(TraceEntry(tUs: Int64((Self.now() - start) / 1000), event: event, ms: ms))
    }

    private func record(_ entry: TraceEntry) { recorder?.write(entry) }

    /// `nextAction` in lockstep mode while a reading waits for its answer.
    static let awaitingDecision = UInt64.max

    static func now() -> UInt64 { cm_monotonic_ns() }
}
