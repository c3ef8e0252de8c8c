import CoinMechCCTalk
import CoinMechFailpoints
import CoinMechHotplug
import CoinMechMDB
import CoinMechModel
import CoinMechSupport
import Foundation

/// An MDB coin changer behind a USB/serial master adapter: the I/O shell around
/// `MDBChangerHost`. It opens the port (reconnecting with backoff), writes the host's lines,
/// feeds it what the adapter answers, and turns the coins the changer kept into batches for the
/// deciding loop.
///
/// The changer decides and keeps coins itself, and its POLL is not repeated: a coin it reports
/// is money at once. `MDBCreditBook` numbers those coins and keeps them until the ledger has
/// them; while it cannot store them the changer is held at COIN TYPE 0.
///
/// Owned by the deciding loop's thread; not thread-safe.
public final class MDBMech: PayingMech {
    private let port: ReconnectingPort
    private var host: MDBChangerHost
    private var started = false
    private var reports: [AcceptorReport] = []
    /// What the changer said that is the mech's status (a jam, a possible theft), for the next
    /// `poll` or `readEvents` to return.
    private var statuses: [MechEvent] = []

    private var book: MDBCreditBook
    private var operatorInhibit = false
    private var positions: CoinPositionMask
    private var creditable: Set<String>?
    private var valuedSetup: MDBChangerSetup?
    /// A POLL reply was lost: the next tube counts are compared with the book's.
    private var tubesAfterLoss = false
    /// Held at COIN TYPE 0 for a payout.
    private var payoutHold = false
    /// What the payout core reads of the changer: its counts and DISPENSEs counted.
    private var payer = MDBChangerPayer()
    private let failpoints: Failpoints

    /// `persisted`: the ledger's counter row for the changer (nil if none yet).
    public init(path: String, baud: Int, host configuration: MDBChangerHostConfiguration, persisted: AcceptorCounter?,
                positions: CoinPositionMask = .all, creditable: Set<String>? = nil, failpoints: Failpoints = .none) {
        self.failpoints = failpoints
        port = ReconnectingPort(path: path, baud: baud)
        host = MDBChangerHost(configuration: configuration)
        book = MDBCreditBook(persisted: persisted)
        self.positions = positions
        self.creditable = creditable
    }

    public var location: String { port.path }
    public var descriptor: Int32? { port.descriptor }
    public var isConnected: Bool { port.isOpen }
    public var disconnectedReason: String? { port.disconnectedReason }
    /// No answers go to a changer: no answer deadline to time.
    public var lineTiming: LineTiming? { nil }

    public var nextWake: Instant? {
        [host.nextWake.map { Instant(nanoseconds: $0) }, port.nextAttemptTime].compactMap { $0 }.min()
    }

    /// The engine's view.
    public var engine: MDBChangerHost { host }

    /// The changer as its engine sees it: its coin types, its tubes, what it takes.
    public var deviceStatus: DeviceStatus {
        var status = DeviceStatus(responding: host.isResponding)
        status.heldForLedger = book.isHeld
        status.accepting = host.accepting.map { $0 != 0 }
        if let identity = host.identity {
            status.identity = DeviceStatus.Identity(manufacturer: identity.manufacturer, product: identity.model, serialNumber: identity.serialNumber)
        }
        var changer = DeviceStatus.Changer()
        changer.coins = host.setup?.coinIDs ?? [:]
        for type in changer.coins.keys { changer.values[type] = host.setup?.valueMinor(ofType: type) }
        changer.currency = host.setup?.currencyCode
        changer.tubes = book.tubes.map(Int.init)
        changer.acceptingTypes = host.accepting
        changer.level = host.setup?.level
        changer.lastCoin = book.lastNumber
        changer.heldForPayout = payoutHold
        status.changer = changer
        return status
    }
    /// The tube counts as the changer last gave them, by coin type.
    public var tubes: [UInt8] { book.tubes }
    /// The number of the last coin the changer reported.
    public var lastCoin: UInt64 { book.lastNumber }
    /// A batch the ledger could not store holds the changer at COIN TYPE 0.
    public var isHeldForLedger: Bool { book.isHeld }
    /// Held at COIN TYPE 0 for a payout.
    public var isHeldForPayout: Bool { payoutHold }

    public func takeReports() -> [AcceptorReport] {
        let (batch, released) = book.take()
        if released {
            report(.notice, "MDB: the ledger records the changer's coins again; it takes coins again")
            applyInhibit()
        }
        defer { reports.removeAll() }
        guard let batch else { return reports }
        return reports + [AcceptorReport(event: .batch(batch), level: .debug, message: "MDB: \(batch.entries.count) coin(s) to record")]
    }

    public func poll(now: Instant) -> [MechEvent] {
        var events: [MechEvent] = []
        if port.openIfDue(now: now) {
            started = false
            events.append(.connected(path: port.path))
        }
        if !started, port.isOpen {
            started = true
            carry(host.start(now: now.nanoseconds))
        } else if started {
            carry(host.tick(now: now.nanoseconds))
        }
        return events + takeStatuses()
    }

    private func takeStatuses() -> [MechEvent] {
        defer { statuses.removeAll() }
        return statuses
    }

    public func readEvents(now: Instant, hungUp: Bool) -> [MechEvent] {
        guard port.isOpen else { return [] }
        let (bytes, lost) = port.readAll(hungUp: hungUp)
        if !bytes.isEmpty { carry(host.received(bytes, at: Instant.now.nanoseconds)) }
        return takeStatuses() + (lost.map { disconnect(reason: $0, now: now) } ?? [])
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
        let wasHeld = book.isHeld
        book.notRecorded()
        if book.isHeld && !wasHeld { applyInhibit() }
    }

    public func rewind(to counter: AcceptorCounter?) {
        if book.rewind(to: counter) { applyInhibit() }
    }

    public func hotplug(_ change: HotplugTracker.Change, now: Instant) -> [MechEvent] {
        port.hotplug(change, now: now, disconnect: { disconnect(reason: $0, now: now) }, poll: { poll(now: now) })
    }

    /// Closes the port. COIN TYPE 0 goes out first, so that the changer keeps no coin while
    /// nobody polls it; coins it kept before are reported by the next start's drain.
    public func disconnect(reason: String, now: Instant) -> [MechEvent] {
        guard port.isOpen else { return [] }
        var coinTypeZero: [UInt8] = []
        for output in host.stop(now: now.nanoseconds) {
            switch output {
            case .send(let command): coinTypeZero += command.line
            case .event(let event): take(event)  // a POLL in flight, lost: recorded by the loop
            }
        }
        port.close(now: now, last: coinTypeZero)
        started = false
        return takeStatuses() + [.lost(path: port.path, reason: reason)]
    }

    // MARK: The engine's outputs

    private func carry(_ outputs: [MDBChangerHostOutput]) {
        for output in outputs {
            switch output {
            case .send(let command):
                port.write(command.line)
                // The DISPENSE (or level 3's PAYOUT) is on the line: from here the changer may pay.
                if case .transaction(let transaction) = command, transaction.address == MDBChangerCommand.address,
                   transaction.command & 0x07 == MDBChangerCommand.dispenseCode
                    || (transaction.command & 0x07 == MDBChangerCommand.expansionCode && transaction.data.first == 0x02) {
                    failpoints.hit(.payoutDispensing)
                }
            case .event(let event): take(event)
            }
        }
        if host.setup != valuedSetup { applyAllowed() }
    }

    private func take(_ event: MDBChangerHostEvent) {
        payer.take(event)
        switch event {
        case .deposited(let type, let routing, _, let tubeCount):
            guard routing.isKept else {
                return report(.debug, "MDB: a coin of type \(type) was returned (\(routing))")
            }
            let coinID = host.setup?.coinID(ofType: type)
            let number = book.kept(type: type, coinID: coinID, routing: routing, tubeCount: tubeCount)
            report(.debug, "MDB: coin \(number) kept: type \(type) (\(coinID ?? "no value")) to the \(routing == .tube ? "tube, \(tubeCount) in it" : "cash box")")
        case .dispensedManually(let type, let count, let valueMinor, let tubeCount):
            book.tube(type, count: tubeCount)
            report(.warning, "MDB: \(count) coin(s) of type \(type) (\(valueMinor.map { "\($0) each" } ?? "no value")) paid out by the changer's own buttons; \(tubeCount) left in its tube")
        case .ready(let setup, _, let current):
            report(.notice, "MDB: changer ready: level \(setup.level), \(setup.currencyCode ?? "country \(String(setup.countryCode, radix: 16))"), coins \(setup.coinIDs.sorted { $0.key < $1.key }.map(\.value).joined(separator: " "))")
            if let current {
                let rose = book.started(withTubes: current.counts)
                if !rose.isEmpty {
                    report(.warning, "MDB: tubes hold more than the ledger last recorded (\(rose.joined(separator: ", "))): coins taken while no reply was recorded, or filled by hand")
                }
            }
        case .dispensed(let dispense):
            _ = book.tubesRose(to: dispense.tubes.counts, cause: "payout")
            report(dispense.disturbed || dispense.timedOut ? .warning : .notice, "MDB: \(event)")
        case .paidValue(let payout):
            _ = book.tubesRose(to: payout.tubes.counts, cause: "payout")
            report(payout.disturbed || payout.timedOut ? .warning : .notice, "MDB: \(event)")
        case .tubes(let status):
            let rose = book.tubesRose(to: status.counts)
            if tubesAfterLoss, !rose.isEmpty {
                report(.critical, "MDB: after the lost POLL reply the tubes hold more (\(rose.joined(separator: ", "))): coins it carried were kept without credit")
            }
            tubesAfterLoss = false
        case .status(let status):
            if let (kind, level) = Self.mechStatus(status) {
                statuses.append(.status(kind, detail: "MDB \(status)"))
                report(level, "MDB changer: \(status)")
            } else {
                report(.debug, "MDB changer: \(status)")
            }
        case .pollReplyLost:
            tubesAfterLoss = true
            // Recorded: the coins in it may have been kept without credit.
            reports.append(AcceptorReport(event: .note(.replyLost(after: book.lastNumber)), level: .critical,
                                          message: "MDB: \(event): coins the changer reported in it may have been kept without credit; the tube counts show those sent to a tube"))
        case .slugs:
            report(.notice, "MDB: \(event)")
        case .notResponding, .adapterError, .replyError, .unexpectedReply, .unknownStatus:
            report(.warning, "MDB: \(event)")
        case .responding, .accepting, .acceptanceUnknown:
            report(.debug, "MDB: \(event)")
        }
    }

    /// The changer's statuses that are the mech's, as the ledger's `mech_status` names them: a
    /// fault that stops coins (`jam`), or a sign of a coin taken back or never delivered
    /// (`tamper`). Busy, escrow and reset notices are the engine's business.
    static func mechStatus(_ status: MDBChangerStatus) -> (MechStatus, AcceptorReport.Level)? {
        switch status {
        case .possibleCreditedCoinRemoval, .noCredit: (.tamper, .critical)
        case .coinJam, .tubeJam, .coinRoutingError, .defectiveTubeSensor, .romChecksumError, .acceptorUnplugged: (.jam, .warning)
        case .escrowRequest, .payoutBusy, .doubleArrival, .changerBusy, .changerWasReset: nil
        }
    }

    private func report(_ level: AcceptorReport.Level, _ message: String) {
        reports.append(AcceptorReport(event: nil, level: level, message: message))
    }

    /// The coin types of the allowed positions whose coin ids the chain credits.
    private func applyAllowed() {
        guard let setup = host.setup else { return }
        valuedSetup = setup
        var mask: UInt16 = 0
        for (type, id) in setup.coinIDs where positions.contains(type + 1) && creditable?.contains(id) ?? true { mask |= 1 << type }
        carry(host.setAllowed(mask, now: Instant.now.nanoseconds))
    }

    private func applyInhibit() {
        carry(host.setInhibited(operatorInhibit || book.isHeld, now: Instant.now.nanoseconds))
    }

    // MARK: Paying out

    /// It counts its tubes and names itself (manufacturer, serial number, coin table); at level
    /// 3 it may pay a value itself (`payingState.valueStepMaximum` says whether it does now).
    public var payoutCapabilities: PayoutCapabilities { [.countsItsUnits, .identifies, .paysValue] }

    public var payingState: PayingDeviceState {
        var state = payer.state(of: host, connected: port.isOpen)
        // Between two TUBE STATUS reads each coin's POLL reply carries its tube's new count
        // (the book keeps it): a dry run (`payout_plan`) sees the tubes as the changer last said.
        // Held for a payout the changer takes no coin, so a count then is the TUBE STATUS's.
        if let units = state.units { state.units = book.tubes.prefix(units.count).map(Int.init) }
        return state
    }

    public func holdForPayout(_ on: Bool) {
        payoutHold = on
        carry(host.holdForPayout(on, now: Instant.now.nanoseconds))
    }

    public func countUnits() {
        carry(host.countTubes(now: Instant.now.nanoseconds))
    }

    public func dispense(type: Int, count: Int) -> Bool {
        guard port.isOpen else { return false }
        let (accepted, outputs) = host.dispense(type: type, count: count, now: Instant.now.nanoseconds)
        carry(outputs)
        return accepted
    }

    public func payValue(_ valueMinor: Int64) -> Bool {
        guard port.isOpen, let scaled = MDBChangerPayer.scaled(valueMinor, host) else { return false }
        let (accepted, outputs) = host.payValue(scaled: scaled, now: Instant.now.nanoseconds)
        carry(outputs)
        return accepted
    }

    public func takeDispensed() -> [DispenseCount] { payer.takeDispensed() }

    /// Its tubes, counted with it held: their fall since each step is what it paid.
    public func restartAccount(_ record: PayoutRecord) -> PayoutRestartAccount { payer.account(of: host) }
}
