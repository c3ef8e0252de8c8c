import CoinMechCCTalk
import CoinMechHotplug
import CoinMechMDB
import CoinMechModel
import CoinMechSupport

/// An MDB coin changer behind a USB/serial master adapter: the I/O shell around
/// `MDBChangerHost`. It opens the port (reconnecting with backoff), writes the host's lines,
/// feeds it what the adapter answers, and turns the coins the changer kept into batches for the
/// deciding loop.
///
/// The changer decides and keeps coins itself, and its POLL is not repeated: a coin it reports
/// is money at once. So the shell numbers the coins itself, on from the ledger's counter row
/// (`AcceptorCounter.eventNumber`; its epoch is always 1), and keeps them until the ledger has
/// them: a batch the ledger could not store is offered again, with any coins reported since,
/// while the changer is held at COIN TYPE 0. The row's `lastResults` holds the 16 tube counts
/// as of the last batch recorded: after a restart, tubes that rose meanwhile are the trace of
/// coins whose POLL reply was lost (a coin sent to the cash box leaves none).
///
/// Owned by the deciding loop's thread; not thread-safe.
public final class MDBMech: AcceptorMech {
    public private(set) var path: String
    private let baud: Int
    private var host: MDBChangerHost
    private var port: SerialPort?
    private var started = false
    private var nextAttempt = Instant(nanoseconds: 0)
    private var backoff: Duration = .milliseconds(100)
    private var lastOpenError: String?
    private var reports: [AcceptorReport] = []

    /// Where the ledger's row stands (as far as this shell knows: a batch it reported counts
    /// as stored until the loop says otherwise).
    private var recorded: AcceptorCounter?
    /// Coins reported by the changer and not yet in a batch; after `notRecorded`, the batch's
    /// coins are back here, first.
    private var waiting: [AcceptorBatch.Entry] = []
    /// The number of the last coin numbered.
    private var lastNumber: UInt64
    /// The tube counts as the changer last gave them.
    private var tubes: [UInt8]
    /// The batch last reported, until the next report: what `notRecorded` takes back.
    private var offered: AcceptorBatch?
    /// The ledger could not store a batch: the changer takes nothing until one is stored.
    private var heldForLedger = false
    private var operatorInhibit = false
    private var positions: CoinPositionMask
    private var creditable: Set<String>?
    private var valuedSetup: MDBChangerSetup?

    public static let epoch: UInt64 = 1

    /// `persisted`: the ledger's counter row for the changer (nil if none yet).
    public init(path: String, baud: Int, host configuration: MDBChangerHostConfiguration, persisted: AcceptorCounter?,
                positions: CoinPositionMask = .all, creditable: Set<String>? = nil) {
        self.path = path
        self.baud = baud
        host = MDBChangerHost(configuration: configuration)
        recorded = persisted
        lastNumber = persisted?.eventNumber ?? 0
        tubes = persisted.map { $0.lastResults.count == 16 ? $0.lastResults : Array(repeating: 0, count: 16) } ?? Array(repeating: 0, count: 16)
        self.positions = positions
        self.creditable = creditable
    }

    public var location: String { path }
    public var descriptor: Int32? { port?.descriptor }
    public var isConnected: Bool { port != nil }
    public var disconnectedReason: String? { port == nil ? lastOpenError : nil }
    /// No answers go to a changer: no answer deadline to time.
    public var lineTiming: LineTiming? { nil }

    public var nextWake: Instant? {
        let hostWake = host.nextWake.map { Instant(nanoseconds: $0) }
        guard port == nil else { return hostWake }
        return [hostWake, nextAttempt].compactMap { $0 }.min()
    }

    /// The engine's view, for `status`.
    public var engine: MDBChangerHost { host }

    public func takeReports() -> [AcceptorReport] {
        // Called again with no word from the loop: the batch offered last was stored.
        if offered != nil, heldForLedger {
            heldForLedger = false
            report(.notice, "MDB: the ledger records the changer's coins again; it takes coins again")
            applyInhibit()
        }
        var out = reports
        reports.removeAll()
        offered = nil
        if !waiting.isEmpty {
            let batch = AcceptorBatch(before: recorded, after: counter(), entries: waiting)
            offered = batch
            // Stored unless the loop says otherwise before the next call.
            recorded = batch.after
            waiting.removeAll()
            out.append(AcceptorReport(event: .batch(batch), level: .debug, message: "MDB: \(batch.entries.count) coin(s) to record"))
        }
        return out
    }

    public func poll(now: Instant) -> [MechEvent] {
        var events: [MechEvent] = []
        if port == nil, now >= nextAttempt {
            do throws(SerialPortError) {
                port = try SerialPort(path: path, baud: baud)
                backoff = .milliseconds(100)
                lastOpenError = nil
                started = false
                events.append(.connected(path: path))
            } catch {
                lastOpenError = error.description
                nextAttempt = now + backoff
                backoff = min(backoff * 2, .seconds(2))
            }
        }
        if !started, port != nil {
            started = true
            carry(host.start(now: now.nanoseconds))
        } else if started {
            carry(host.tick(now: now.nanoseconds))
        }
        return events
    }

    public func readEvents(now: Instant, hungUp: Bool) -> [MechEvent] {
        guard let port else { return [] }
        var waitingBytes: [UInt8] = []
        var lost: String?
        reading: while true {
            switch port.read() {
            case .nothing:
                if hungUp { lost = "hang-up" }
                break reading
            case .hangUp(let reason):
                lost = reason
                break reading
            case .bytes(let bytes):
                waitingBytes += bytes
            }
        }
        if !waitingBytes.isEmpty { carry(host.received(waitingBytes, at: Instant.now.nanoseconds)) }
        return lost.map { disconnect(reason: $0, now: now) } ?? []
    }

    /// A changer is never asked about a coin: it has kept it already.
    public func answer(deviceSeq: UInt64, accept: Bool) -> Bool { false }

    /// Inhibit on (COIN TYPE 0: the changer returns every coin) or off.
    public func setInhibit(_ on: Bool) {
        operatorInhibit = on
        applyInhibit()
    }

    public func allow(_ positions: CoinPositionMask, creditable: Set<String>?) {
        self.positions = positions
        self.creditable = creditable
        valuedSetup = nil
        applyAllowed()
    }

    public func notRecorded() {
        guard let offered else { return }
        self.offered = nil
        recorded = offered.before
        waiting = offered.entries + waiting
        if !heldForLedger {
            heldForLedger = true
            applyInhibit()
        }
    }

    public func rewind(to counter: AcceptorCounter?) {
        guard let offered else { return }
        self.offered = nil
        recorded = counter
        if counter == offered.after { return }  // it was stored before: nothing to offer again
        // Another writer moved the row: the same coins, numbered on from where it stands.
        var number = counter?.eventNumber ?? 0
        waiting = (offered.entries + waiting).map { entry in
            guard case .credit(var credit) = entry else { return entry }
            number += 1
            credit.number = number
            return .credit(credit)
        }
        lastNumber = number
    }

    public func hotplug(_ change: HotplugTracker.Change, now: Instant) -> [MechEvent] {
        switch change {
        case .vanished:
            return disconnect(reason: "device removed", now: now)
        case .appeared:
            nextAttempt = now
            backoff = .milliseconds(100)
            return poll(now: now)
        }
    }

    /// Closes the port. COIN TYPE 0 goes out first, so that the changer keeps no coin while
    /// nobody polls it; coins it kept before are reported by the next start's drain.
    public func disconnect(reason: String, now: Instant) -> [MechEvent] {
        guard let port else { return [] }
        for case .send(let command) in host.stop(now: now.nanoseconds) { _ = port.write(command.line) }
        self.port = nil
        started = false
        nextAttempt = now + backoff
        return [.lost(path: path, reason: reason)]
    }

    // MARK: The engine's outputs

    private func carry(_ outputs: [MDBChangerHostOutput]) {
        for output in outputs {
            switch output {
            case .send(let command): _ = port?.write(command.line)
            case .event(let event): take(event)
            }
        }
        if host.setup != valuedSetup { applyAllowed() }
    }

    private func take(_ event: MDBChangerHostEvent) {
        switch event {
        case .deposited(let type, let routing, _, let tubeCount):
            guard routing.isKept else {
                return report(.debug, "MDB: a coin of type \(type) was returned (\(routing))")
            }
            if routing == .tube { tubes[type] = UInt8(clamping: tubeCount) }
            lastNumber += 1
            let coinID = host.setup?.coinID(ofType: type)
            waiting.append(.credit(AcceptorCredit(epoch: Self.epoch, number: lastNumber, position: type + 1, coinID: coinID,
                                                  sorterPath: routing.rawValue)))
            report(.debug, "MDB: coin \(lastNumber) kept: type \(type) (\(coinID ?? "no value")) to the \(routing == .tube ? "tube, \(tubeCount) in it" : "cash box")")
        case .dispensedManually(let type, let count, let valueMinor, let tubeCount):
            tubes[type] = UInt8(clamping: tubeCount)
            report(.warning, "MDB: \(count) coin(s) of type \(type) (\(valueMinor.map { "\($0) each" } ?? "no value")) paid out by the changer's own buttons; \(tubeCount) left in its tube")
        case .ready(let setup, _, let current):
            report(.notice, "MDB: changer ready: level \(setup.level), \(setup.currencyCode ?? "country \(String(setup.countryCode, radix: 16))"), coins \((0..<16).compactMap { setup.coinID(ofType: $0) }.joined(separator: " "))")
            if let current { compareTubes(current.counts) }
        case .tubes(let status):
            for (type, count) in status.counts.enumerated() where type < 16 { tubes[type] = UInt8(clamping: count) }
        case .status(let status):
            let level: AcceptorReport.Level = status == .noCredit || status == .possibleCreditedCoinRemoval ? .critical : .notice
            report(level, "MDB changer: \(status)")
        case .pollReplyLost:
            report(.critical, "MDB: \(event): coins the changer reported in it were kept without credit; the tube counts show those sent to a tube")
        case .notResponding, .adapterError, .replyError, .unexpectedReply, .slugs, .unknownStatus:
            report(.warning, "MDB: \(event)")
        case .responding, .accepting, .acceptanceUnknown:
            report(.debug, "MDB: \(event)")
        }
    }

    /// After a start: tubes that hold more than the ledger last recorded took coins nobody
    /// credited (a POLL reply lost when the daemon stopped), or a technician filled them.
    private func compareTubes(_ current: [Int]) {
        let rose = current.enumerated().compactMap { type, count -> String? in
            guard type < 16, count > Int(tubes[type]) else { return nil }
            return "type \(type): \(tubes[type]) → \(count)"
        }
        for (type, count) in current.enumerated() where type < 16 { tubes[type] = UInt8(clamping: count) }
        guard recorded != nil, !rose.isEmpty else { return }
        report(.warning, "MDB: tubes hold more than the ledger last recorded (\(rose.joined(separator: ", "))): coins taken while no reply was recorded, or filled by hand")
    }

    private func report(_ level: AcceptorReport.Level, _ message: String) {
        reports.append(AcceptorReport(event: nil, level: level, message: message))
    }

    private func counter() -> AcceptorCounter {
        AcceptorCounter(epoch: Self.epoch, eventNumber: lastNumber, lastResults: tubes, serialNumber: nil, expectsRestart: false)
    }

    /// The coin types of the allowed positions whose coin ids the chain credits.
    private func applyAllowed() {
        guard let setup = host.setup else { return }
        valuedSetup = setup
        var mask: UInt16 = 0
        for type in 0..<16 where positions.contains(type + 1) {
            guard let id = setup.coinID(ofType: type), creditable?.contains(id) ?? true else { continue }
            mask |= 1 << type
        }
        carry(host.setAllowed(mask, now: Instant.now.nanoseconds))
    }

    private func applyInhibit() {
        carry(host.setInhibited(operatorInhibit || heldForLedger, now: Instant.now.nanoseconds))
    }
}
