import CoinMechCCTalk
@testable import CoinMechTestSupport
import CoinSimCore
import Testing

/// A `CCTalkHost` and a `CCTalkAcceptor` joined by a simulated serial line on a simulated
/// clock: bytes take their time at the baud rate, the acceptor answers after `latency`, the
/// line may echo the host's bytes, and replies can be dropped, refused or damaged on demand.
/// Every batch goes through a `CCTalkTestLedger`; a batch it cannot store goes back to the
/// host (`notRecorded`), one that does not follow from what it holds rewinds the host.
///
/// Deterministic and instant: `run(for:)` jumps from one due event to the next.
struct CCTalkSimulatedLine {
    enum ReplyFault { case drop, nak, busy, corrupt }

    static let ms: UInt64 = 1_000_000

    private(set) var host: CCTalkHost
    var acceptor: CCTalkAcceptor
    var ledger: CCTalkTestLedger
    private(set) var now: UInt64 = 0
    /// Everything the host reported, in order.
    private(set) var events: [CCTalkHostEvent] = []
    /// What became of each insertion.
    private(set) var outcomes: [CCTalkAcceptor.Outcome] = []
    /// Events delivered to the host in an intact credit-buffer reply.
    private(set) var reported: Set<CCTalkAcceptor.EventKey> = []
    /// Events that fell out of the buffer, or went with it when the device restarted.
    private(set) var dropped: Set<CCTalkAcceptor.EventKey> = []
    /// Events that left the buffer before any delivered reply carried them to the host.
    var lostOnDevice: Set<CCTalkAcceptor.EventKey> { dropped.subtracting(reported) }
    /// The host's epoch for each device session, from the batches the ledger stored: a batch
    /// ends in the epoch the host gives the session its reply came from. (A restart the host
    /// cannot see, at counter 0 before any event, keeps the epoch: the numbers go on alike.)
    private(set) var epochs: [Int: UInt64] = [:]
    /// Sessions the host gave two epochs: it lost track of the device.
    private(set) var epochConflicts: [String] = []
    /// Faults for the next replies to a header, consumed one per reply.
    var faults: [CCTalkHeader: [ReplyFault]] = [:]
    var echo: Bool
    var baud = 9600
    var latency: UInt64 = 2 * ms
    /// While set, the host is stalled: it neither runs nor reads (bytes wait for it).
    private(set) var paused = false

    private struct Delivery {
        var at: UInt64
        var toHost: Bool
        var bytes: [UInt8]
        var reported: [CCTalkAcceptor.EventKey] = []
        var resetsDevice = false
        /// The device's session when it built the reply.
        var session = 0
    }

    private var deliveries: [Delivery] = []
    private var insertions: [(at: UInt64, item: CCTalkAcceptor.Item)] = []
    private var deviceParser: CCTalkParser
    private var configuration: CCTalkHostConfiguration

    init(acceptor: CCTalkAcceptor, configuration: CCTalkHostConfiguration = CCTalkHostConfiguration(), echo: Bool = false,
         ledger: CCTalkTestLedger = CCTalkTestLedger()) {
        self.acceptor = acceptor
        self.configuration = configuration
        self.echo = echo
        self.ledger = ledger
        host = CCTalkHost(configuration: configuration, persisted: ledger.state)
        deviceParser = CCTalkParser(checksum: acceptor.settings.checksum, destinations: [acceptor.settings.address, 0])
    }

    /// A fresh acceptor with coins in positions 1–4 (EUR 2, 1, 0.50, 0.20).
    static func acceptorSettings(checksum: CCTalkChecksum = .simple) -> CCTalkAcceptor.Settings {
        var settings = CCTalkAcceptor.Settings()
        settings.checksum = checksum
        settings.coinIDs = [1: CoinID("EU200A"), 2: CoinID("EU100A"), 3: CoinID("EU050A"), 4: CoinID("EU020A")]
        return settings
    }

    mutating func start() { apply(host.start(now: now)) }

    /// The daemon restarts: a new host from what the ledger holds (and, `remembering`, the
    /// device the last host identified, as the daemon reads it from the ledger).
    mutating func restartHost(remembering: Bool = false) {
        host = CCTalkHost(configuration: configuration, persisted: ledger.state, remembered: remembering ? host.identity : nil)
        deliveries.removeAll { $0.toHost }  // the old process's unread bytes die with it
        apply(host.start(now: now))
    }

    mutating func pause() { paused = true }

    /// The host runs again: like a driver's loop, it reads what waited for it before its
    /// timers run.
    mutating func resume() {
        paused = false
        step()
    }

    mutating func allow(_ mask: CoinPositionMask) { apply(host.allow(mask, now: now)) }
    mutating func setInhibited(_ on: Bool) { apply(host.setInhibited(on, now: now)) }
    mutating func resetDevice() { apply(host.resetDevice(now: now)) }

    /// Inserts `item` after `delay`.
    mutating func insert(_ item: CCTalkAcceptor.Item, after delay: UInt64 = 0) {
        insertions.append((now + delay, item))
        insertions.sort { $0.at < $1.at }
    }

    /// Inserts coins of the positions given, `gap` apart, starting after `gap`.
    mutating func insertCoins(_ positions: [Int], gap: UInt64 = 300 * ms) {
        for (index, position) in positions.enumerated() { insert(.coin(position: position), after: gap * UInt64(index + 1)) }
    }

    /// Lets `duration` of simulated time pass.
    mutating func run(for duration: UInt64) {
        let end = now + duration
        var stepsAtThisTime = 0
        while true {
            var next = UInt64.max
            if !paused, let wake = host.nextWake { next = min(next, wake) }
            if let delivery = deliveries.filter({ !$0.toHost || !paused }).map(\.at).min() { next = min(next, delivery) }
            if let insertion = insertions.first { next = min(next, insertion.at) }
            guard next <= end else { break }
            stepsAtThisTime = next <= now ? stepsAtThisTime + 1 : 0
            if stepsAtThisTime > 10_000 {
                // Something is due now, over and over, and nothing happens: a spinning host.
                Issue.record("the host wants to run at \(now) ns again and again without doing anything")
                break
            }
            now = max(now, next)
            step()
        }
        now = end
    }

    /// Runs until `condition` holds or `limit` passes; returns whether it held.
    @discardableResult
    mutating func run(until limit: UInt64, _ condition: (Self) -> Bool) -> Bool {
        let end = now + limit
        while now < end {
            if condition(self) { return true }
            run(for: 10 * Self.ms)
        }
        return condition(self)
    }

    private mutating func step() {
        while let index = deliveries.indices.filter({ deliveries[$0].at <= now && (!deliveries[$0].toHost || !paused) })
            .min(by: { deliveries[$0].at < deliveries[$1].at }) {
            let delivery = deliveries.remove(at: index)
            if delivery.toHost {
                reported.formUnion(delivery.reported)
                apply(host.received(delivery.bytes, at: now), session: delivery.session)
                if delivery.resetsDevice { dropped.formUnion(acceptor.restart()) }
            } else {
                toDevice(delivery.bytes)
            }
        }
        while let first = insertions.first, first.at <= now {
            insertions.removeFirst()
            let outcome = acceptor.insert(first.item, at: now)
            outcomes.append(outcome)
            if let key = outcome.evicted { dropped.insert(key) }
        }
        if !paused, let wake = host.nextWake, wake <= now { apply(host.tick(now: now)) }
    }

    private mutating func toDevice(_ bytes: [UInt8]) {
        var frames: [CCTalkFrame] = []
        deviceParser.feed(bytes, at: now) { if case .frame(let frame) = $0 { frames.append(frame) } }
        for frame in frames {
            let handling = acceptor.handle(frame, at: now)
            guard var reply = handling.reply else { continue }
            var reported = handling.reported
            let header = CCTalkHeader(rawValue: frame.header)
            var bytes: [UInt8]
            switch header.flatMap({ faults[$0]?.first }) {
            case nil:
                bytes = reply.encoded(acceptor.settings.checksum)
            case .drop?:
                faults[header!]!.removeFirst()
                continue
            case .nak?, .busy?:
                let fault = faults[header!]!.removeFirst()
                reply = CCTalkFrame(destination: reply.destination, source: reply.source,
                                    header: (fault == .nak ? CCTalkHeader.nak : .busy).rawValue)
                bytes = reply.encoded(acceptor.settings.checksum)
                reported = []
            case .corrupt?:
                faults[header!]!.removeFirst()
                bytes = reply.encoded(acceptor.settings.checksum)
                bytes[bytes.count - 1] ^= 0x5A
                reported = []
            }
            let at = now + latency + transit(bytes.count)
            deliveries.append(Delivery(at: at, toHost: true, bytes: bytes, reported: reported, resetsDevice: handling.resets,
                                       session: acceptor.session))
        }
    }

    private mutating func apply(_ outputs: [CCTalkHostOutput], session: Int? = nil) {
        for output in outputs {
            switch output {
            case .send(let bytes):
                deliveries.append(Delivery(at: now + transit(bytes.count), toHost: false, bytes: bytes))
                if echo { deliveries.append(Delivery(at: now + transit(bytes.count), toHost: true, bytes: bytes)) }
            case .event(let event):
                events.append(event)
                guard case .batch(let batch) = event else { continue }
                guard ledger.commit(batch) else {
                    if ledger.failing { host.notRecorded(batch) } else { host.rewind(to: ledger.state) }
                    continue
                }
                if let session {
                    if let known = epochs[session], known != batch.after.epoch {
                        epochConflicts.append("session \(session) was epoch \(known), now \(batch.after.epoch)")
                    }
                    epochs[session] = batch.after.epoch
                }
            }
        }
    }

    private func transit(_ count: Int) -> UInt64 { UInt64(count) * 10 * 1_000_000_000 / UInt64(baud) }

    // MARK: Judging

    /// The device's events that were credits, as (session, number).
    var taken: [CCTalkAcceptor.EventKey] { outcomes.filter { $0.fate == .credited }.map(\.event) }

    /// What a correct host credits: every coin taken, less those the buffer lost before any
    /// reply carried them, in the epoch the host gave its session.
    var expectedCredits: [CCTalkTestLedger.Key] {
        taken.filter { !lostOnDevice.contains($0) }.map {
            CCTalkTestLedger.Key(epoch: epochs[$0.session] ?? UInt64.max, number: $0.number)
        }.sorted()
    }

    /// The device event the host's (epoch, number) names, if the host numbered it as the device did.
    /// (Sessions that restarted before any event share an epoch: the one with such an event is meant.)
    func deviceKey(_ key: CCTalkTestLedger.Key) -> CCTalkAcceptor.EventKey? {
        let sessions = epochs.filter { $0.value == key.epoch }.map(\.key).sorted()
        let keys = sessions.map { CCTalkAcceptor.EventKey(session: $0, number: key.number) }
        return keys.first { key in outcomes.contains { $0.event == key } } ?? keys.last
    }

    /// What the money rule allows, for runs where the buffer may overrun: every credit is a coin
    /// the device took; a coin it took is credited, or it left the buffer before a reply
    /// brought it, or after the host read it without being able to record it (the host then
    /// says it is lost); and the host calls lost only events that left the buffer.
    var moneyProblems: [String] {
        var problems: [String] = []
        let credited = Set(ledger.creditKeys.map { deviceKey($0) })
        let taken = Set(self.taken)
        for key in ledger.creditKeys where deviceKey(key).map({ !taken.contains($0) }) ?? true {
            problems.append("phantom: \(key) credited, but the device took no such coin")
        }
        let declaredLost = Set(ledger.lost.compactMap(deviceKey))
        for key in taken where !credited.contains(key) {
            guard dropped.contains(key) else {
                problems.append("missing: \(key) is still in the buffer and not credited")
                continue
            }
            if reported.contains(key) && !declaredLost.contains(key) {
                problems.append("lost silently: \(key) reached the host, left the buffer, and was neither credited nor called lost")
            }
        }
        for key in ledger.lost where deviceKey(key).map({ !dropped.contains($0) }) ?? true {
            problems.append("false alarm: \(key) called lost, but the buffer never lost it")
        }
        return problems
    }

    var identifiedCount: Int { events.filter { if case .identified = $0 { true } else { false } }.count }
    var batches: [CCTalkLedgerBatch] { events.compactMap { if case .batch(let batch) = $0 { batch } else { nil } } }
}
