import CoinMechCCTalk
import CoinMechFailpoints
import CoinMechHotplug
import CoinMechModel
import CoinMechSupport

/// A ccTalk coin acceptor on a serial port: the I/O shell around `CCTalkHost`. It opens the
/// port (reconnecting with backoff), writes what the host sends, feeds it what the line gives
/// back, and keeps the host's events for the deciding loop (`takeHostEvents`).
///
/// The acceptor decides and takes coins itself: the mech produces no readings to answer. Its
/// credits come as ledger batches, which the loop must record, then report back before the
/// host is called again: nothing (stored), `notRecorded` or `rewind`.
///
/// With payout hoppers on the same bus it also gives change (`CCTalkMech+Hoppers`): the
/// hoppers' requests go out through the host, between its buffer polls.
///
/// Owned by the deciding loop's thread; not thread-safe.
public final class CCTalkMech: AcceptorMech {
    private let port: ReconnectingPort
    private var host: CCTalkHost
    /// The payout hoppers, if any (their levels are the ledger's, kept by the payout core), and
    /// the currency they pay.
    public internal(set) var bank: CCTalkHopperBank?
    public let payoutCurrency: String?
    var dispensed: [DispenseCount] = []
    private let failpoints: Failpoints
    private var started = false
    private var hostEvents: [CCTalkHostEvent] = []
    /// The batch last reported, until the next report: what `notRecorded` hands back.
    private var offered: CCTalkLedgerBatch?

    /// `persisted`: the counter state the ledger holds for this acceptor (nil if none);
    /// `remembered`: who the ledger last identified at its address.
    /// `hoppers`: the payout hoppers on the bus, paying `currency`.
    public init(path: String, host configuration: CCTalkHostConfiguration, persisted: CCTalkCounterState?,
                remembered: CCTalkDeviceIdentity? = nil, hoppers: [CCTalkHopperUnit] = [], currency: String? = nil,
                failpoints: Failpoints = .none) {
        self.failpoints = failpoints
        var configuration = configuration
        configuration.otherAddresses.formUnion(hoppers.map(\.address))
        port = ReconnectingPort(path: path, baud: configuration.baud)
        host = CCTalkHost(configuration: configuration, persisted: persisted, remembered: remembered)
        bank = hoppers.isEmpty ? nil : CCTalkHopperBank(units: hoppers)
        payoutCurrency = currency
    }

    public var location: String { port.path }
    public var descriptor: Int32? { port.descriptor }
    public var isConnected: Bool { port.isOpen }
    public var disconnectedReason: String? { port.disconnectedReason }
    /// No answers go to a ccTalk acceptor: no answer deadline to time.
    public var lineTiming: LineTiming? { nil }

    public var nextWake: Instant? {
        let hoppers = started && port.isOpen ? bank.map { Instant(nanoseconds: $0.nextWake) } : nil
        return [host.nextWake.map { Instant(nanoseconds: $0) }, port.nextAttemptTime, hoppers].compactMap { $0 }.min()
    }

    /// The engine's view.
    public var engine: CCTalkHost { host }

    /// The acceptor as its engine sees it, and its hoppers, if any.
    public var deviceStatus: DeviceStatus {
        var status = DeviceStatus(responding: host.isResponding)
        status.heldForLedger = host.waitsForLedger
        status.accepting = host.accepting
        var acceptor = DeviceStatus.Acceptor()
        if let identity = host.identity {
            acceptor.identified = true
            status.identity = DeviceStatus.Identity(manufacturer: identity.manufacturer ?? "", product: identity.productCode ?? "",
                                                    serialNumber: identity.serialNumber.map { "\($0)" } ?? "")
            acceptor.coins = identity.coinIDs.mapValues(\.text)
        }
        acceptor.enabledPositions = host.enabled?.description
        if let counter = host.recordedState {
            acceptor.epoch = counter.epoch
            acceptor.eventNumber = counter.eventNumber
            acceptor.counter = counter.counter
        }
        acceptor.fault = host.fault.isFault ? host.fault.description : nil
        let statistics = host.statistics
        acceptor.polls = statistics.polls
        acceptor.timeouts = statistics.timeouts
        acceptor.retries = statistics.retries
        acceptor.naks = statistics.naks
        acceptor.busies = statistics.busies
        status.acceptor = acceptor
        status.hoppers = bank?.deviceStatus(currency: payoutCurrency)
        return status
    }

    public func takeReports() -> [AcceptorReport] {
        defer { hostEvents.removeAll() }
        offered = nil
        return hostEvents.map { event in
            if case .batch(let batch) = event { offered = batch }
            return AcceptorReport(event: AcceptorEvent(event), level: Self.level(of: event), message: Self.message(for: event))
        }
    }

    private static func level(of event: CCTalkHostEvent) -> AcceptorReport.Level {
        switch event {
        case .batch(let batch): batch.lostCount > 0 ? .critical : .debug
        case .fault, .notResponding, .notACoinAcceptor, .refused: .warning
        case .identified, .responding, .faultCleared: .notice
        case .configured, .malformedReply, .lineError, .deviceAnswer: .debug
        }
    }

    private static func message(for event: CCTalkHostEvent) -> String {
        if case .batch(let batch) = event, batch.lostCount > 0 {
            return "ccTalk: \(batch.lostCount) event(s) LOST to a buffer overrun: coins may have been taken without credit; \(event)"
        }
        return "ccTalk \(event)"
    }

    public func poll(now: Instant) -> [MechEvent] {
        var events: [MechEvent] = []
        if port.openIfDue(now: now) { events.append(.connected(path: port.path)) }
        if !started, port.isOpen {
            started = true
            carry(host.start(now: now.nanoseconds))
            if let asks = bank?.start(now: now.nanoseconds) { ask(asks) }
        } else if started {
            // Requests go on while the port is away: they time out, and the host reports the
            // device as not responding (once) and identifies it again when it answers.
            carry(host.tick(now: now.nanoseconds))
            if let asks = bank?.tick(now: now.nanoseconds) { ask(asks) }
        }
        return events
    }

    public func readEvents(now: Instant, hungUp: Bool) -> [MechEvent] {
        guard port.isOpen else { return [] }
        // One call into the host for everything waiting: a batch it yields must be settled
        // (recorded or not) before it is called again.
        let (bytes, lost) = port.readAll(hungUp: hungUp)
        if !bytes.isEmpty { carry(host.received(bytes, at: Instant.now.nanoseconds)) }
        return lost.map { disconnect(reason: $0, now: now) } ?? []
    }

    /// A ccTalk acceptor is never asked about a coin: it has taken it already.
    public func answer(deviceSeq: UInt64, accept: Bool) -> Bool { false }

    /// Master inhibit on (the acceptor returns every coin) or off.
    public func setInhibit(_ on: Bool) {
        carry(host.setInhibited(on, now: Instant.now.nanoseconds))
    }

    /// Enables these coin positions, those of them whose coin ids are `creditable` (the chain
    /// credits them): the acceptor returns a coin of any other.
    public func allow(_ positions: CoinPositionMask, creditable: Set<String>?) {
        carry(host.allow(positions, creditable: creditable, now: Instant.now.nanoseconds))
    }

    /// The host holds the acceptor inhibited and offers the batch's entries again with the
    /// next poll.
    public func notRecorded() {
        if let offered { host.notRecorded(offered) }
        offered = nil
    }

    public func rewind(to counter: AcceptorCounter?) {
        offered = nil
        host.rewind(to: counter.map(CCTalkCounterState.init))
    }

    public func hotplug(_ change: HotplugTracker.Change, now: Instant) -> [MechEvent] {
        port.hotplug(change, now: now, disconnect: { disconnect(reason: $0, now: now) }, poll: { poll(now: now) })
    }

    /// Closes the port. Master inhibit goes out first, so that no coin is taken while nobody
    /// polls (the acceptor would inhibit itself after about a second anyway); coins it took
    /// before stay in its buffer for the next start.
    public func disconnect(reason: String, now: Instant) -> [MechEvent] {
        guard port.isOpen else { return [] }
        let configuration = host.configuration
        let inhibit = CCTalkRequest.setMasterInhibit(accepting: false)
            .frame(to: configuration.address, from: configuration.hostAddress).encoded(configuration.checksum)
        port.close(now: now, last: inhibit)
        return [.lost(path: port.path, reason: reason)]
    }

    func carry(_ outputs: [CCTalkHostOutput]) {
        for output in outputs {
            switch output {
            case .send(let bytes):
                port.write(bytes)
                // A hopper's dispense is on the line: from here it may pay.
                if bytes.count > 3, bytes[3] == CCTalkHeader.dispenseHopperCoins.rawValue, bank?.addresses.contains(bytes[0]) == true {
                    failpoints.hit(.payoutDispensing)
                }
            case .event(.deviceAnswer(let address, let request, let answer)):
                guard var bank else { continue }
                let asks = bank.answered(address, request, answer, now: Instant.now.nanoseconds)
                self.bank = bank
                collectPayments()
                ask(asks)
            case .event(let event): hostEvents.append(event)
            }
        }
    }

    /// The hopper bank's requests, through the host.
    func ask(_ asks: [CCTalkHopperBank.Ask]) {
        for ask in asks { carry(host.ask(ask.request, at: ask.address, now: Instant.now.nanoseconds)) }
    }
}
