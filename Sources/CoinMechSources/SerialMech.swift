import CoinMechFailpoints
import CoinMechHotplug
import CoinMechModel
import CoinMechSerial

#if canImport(Glibc)
import CoinMechSupport
import Glibc
#endif

/// A raw-sensor coin mech on a serial line: opens the device, turns bytes into events,
/// answers readings, and reconnects with backoff when the device goes away (USB adapters do).
///
/// Owned by the deciding loop's thread; not thread-safe.
public final class SerialMech: ConfirmingMech, FramedMech {
    /// The device opened: the configured path, or the node udev reported for a USB match.
    public private(set) var path: String
    /// Follow udev's device node (the match is by USB identity, not by path).
    public var followsDevnode = false
    public let baud: Int
    /// The mech reports each accepted coin's fate and answers queries (protocol version 2).
    public let confirmsCoins: Bool
    private let failpoints: Failpoints
    private var clock = MechClock()
    private var port: SerialPort?
    private var parser = FrameParser()
    private var nextAttempt = Instant(nanoseconds: 0)
    private var backoff: Duration = SerialMech.minimumBackoff
    private var inhibited = false
    private var lastOpenError: String?

    static let minimumBackoff: Duration = .milliseconds(100)
    static let maximumBackoff: Duration = .seconds(2)

    public init(path: String, baud: Int, confirmsCoins: Bool = true, failpoints: Failpoints = .none) {
        self.path = path
        self.baud = baud
        self.confirmsCoins = confirmsCoins
        self.failpoints = failpoints
    }

    public var location: String { path }
    /// The descriptor to poll for input, while connected.
    public var descriptor: Int32? { port?.descriptor }
    public var nextWake: Instant? { nextReconnect }
    public var lineTiming: LineTiming? { LineTiming(baud: baud, answerFraming: SerialFrame.decisionFraming) }

    public func poll(now: Instant) -> [MechEvent] { connectIfDue(now: now) }
    public var isConnected: Bool { port != nil }
    /// Frames the parser skipped since start, by kind.
    public var frameErrors: FrameErrorCounts { parser.errors }
    /// When the next reconnect attempt is due, while disconnected.
    public var nextReconnect: Instant? { port == nil ? nextAttempt : nil }
    /// Why the last open failed, while disconnected.
    public var disconnectedReason: String? { port == nil ? lastOpenError : nil }

    /// Opens the device if disconnected and an attempt is due.
    public func connectIfDue(now: Instant) -> [MechEvent] {
        guard port == nil, now >= nextAttempt else { return [] }
        do throws(SerialPortError) {
            port = try SerialPort(path: path, baud: baud)
            parser = FrameParser(continuingCountsOf: parser)
            backoff = Self.minimumBackoff
            lastOpenError = nil
            if inhibited { _ = port?.write(SerialFrame.inhibit(true).bytes) }
            // Which session is the mech in? Its answer ($CMS,SESSION,<boot>) tells the host
            // whether it powered up while nobody listened, and which boot to query about.
            askSession()
            return [.connected(path: path)]
        } catch {
            lastOpenError = error.description
            nextAttempt = now + backoff
            backoff = min(backoff * 2, Self.maximumBackoff)
            return []
        }
    }

    /// Reads everything waiting and returns what it meant. `hungUp` is poll's POLLHUP/POLLERR:
    /// once the waiting bytes are read, the device is gone.
    public func readEvents(now: Instant, hungUp: Bool = false) -> [MechEvent] {
        guard let port else { return [] }
        var events: [MechEvent] = []
        while true {
            switch port.read() {
            case .nothing:
                return hungUp ? events + disconnect(reason: "hang-up", now: now) : events
            case .hangUp(let reason):
                return events + disconnect(reason: reason, now: now)
            case .bytes(let bytes):
                // When the read returned: the kernel does not time-stamp serial bytes.
                let readAt = Instant.now
                parser.feed(bytes) { event in
                    if let translated = translate(event, readAt: readAt) { events.append(translated) }
                }
            }
        }
    }

    private func translate(_ event: FrameEvent, readAt: Instant) -> MechEvent? {
        switch event {
        case .frame(.reading(let reading)):
            failpoints.hit(.readingParsed)
            let measurement = Measurement(diameterMM: reading.diameterMM, weightG: reading.weightG, thicknessMM: reading.thicknessMM, channel: nil,
                                          alloy: reading.alloy)
            let sentAt = reading.mechMilliseconds.map { clock.sentAt(mechMilliseconds: $0, readAt: readAt) } ?? readAt
            return .reading(MechReading(deviceSeq: reading.deviceSeq, measurement: measurement, sentAt: sentAt, readAt: readAt,
                                        alloyFault: reading.alloyFault))
        case .frame(.confirmation(let seq, let fate)):
            return .confirmation(deviceSeq: seq, fate: fate)
        case .frame(.journal(let boot, let seq, let fate)):
            return .journal(boot: boot, deviceSeq: seq, fate: fate)
        case .frame(.status(.powerUp, let detail)):
            // The clock is not reset here: a mech whose clock restarts shows it by going back.
            return .powerUp(boot: detail.flatMap { UInt64($0) })
        case .frame(.status(.session, let detail)):
            guard let boot = detail.flatMap({ UInt64($0) }) else { return .protocolError(.malformed(sentence: "$CMS,SESSION", reason: "no boot number")) }
            return .session(boot: boot)
        case .frame(.status(let status, let detail)):
            return .status(status, detail: detail)
        case .frame:
            return nil  // a mech does not send decisions, queries or inhibit commands; ignore echoes
        case .error(let error):
            return .protocolError(error)
        }
    }

    /// Tells the mech to open the gate (`accept`) or return the coin. False if the line is gone.
    @discardableResult
    public func answer(deviceSeq: UInt64, accept: Bool) -> Bool {
        port?.write(SerialFrame.decision(deviceSeq: deviceSeq, accept: accept).bytes) ?? false
    }

    /// Asks the mech's journal about coin `deviceSeq` of session `boot` (`$CMQ`).
    @discardableResult
    public func query(boot: UInt64, deviceSeq: UInt64) -> Bool {
        guard confirmsCoins else { return false }
        return port?.write(SerialFrame.query(boot: boot, deviceSeq: deviceSeq).bytes) ?? false
    }

    /// Says hello (`$CMH`): the mech answers `$CMS,SESSION,<boot>`.
    public func askSession() {
        if confirmsCoins { _ = port?.write(SerialFrame.hello.bytes) }
    }

    /// Inhibits the mech (it returns coins by itself) or lifts it; repeated after a reconnect.
    public func setInhibit(_ on: Bool) {
        inhibited = on
        _ = port?.write(SerialFrame.inhibit(on).bytes)
    }

    public func hotplug(_ change: HotplugTracker.Change, now: Instant) -> [MechEvent] {
        switch change {
        case .vanished:
            return disconnect(reason: "device removed", now: now)
        case .appeared(let devnode):
            if followsDevnode { path = devnode }
            nextAttempt = now
            backoff = Self.minimumBackoff
            return connectIfDue(now: now)
        }
    }

    /// Closes the device (also used at shutdown).
    public func disconnect(reason: String, now: Instant) -> [MechEvent] {
        guard port != nil else { return [] }
        port = nil
        nextAttempt = now + backoff
        return [.lost(path: path, reason: reason)]
    }
}

extension FrameParser {
    /// A fresh parser (no partial sentence) that keeps counting errors where `other` left off.
    init(continuingCountsOf other: FrameParser) {
        self.init()
        restoreCounts(other.errors)
    }
}
