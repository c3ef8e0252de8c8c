import CoinMechCCTalk

/// A ccTalk coin acceptor's behaviour without a line: request frames in, replies out; coins
/// in, events into its five-deep buffer. `CCTalkSimulator` puts it on a pty; tests drive it on
/// simulated time.
///
/// It powers up (and resets) with its counter at 0, an empty buffer, every position inhibited
/// and master inhibit on, and inhibits itself while it has not been polled for
/// `selfInhibitNanoseconds`. It answers the headers a coin acceptor host uses, and NAKs the
/// others.
public struct CCTalkAcceptor: Sendable {
    /// What a device is: fixed for a session.
    public struct Settings: Sendable, Hashable {
        public var address: UInt8 = CCTalkFrame.coinAcceptorAddress
        public var checksum: CCTalkChecksum = .simple
        public var category = "Coin Acceptor"
        public var manufacturer = "CoinMech"
        public var productCode = "coinsim"
        public var serialNumber: UInt32 = 12_345_678
        public var softwareRevision = "coinsim-1"
        /// What each position holds; positions not listed read `......`.
        public var coinIDs: [Int: CoinID] = [:]
        /// The sorter path of every credit (1: the cash box).
        public var sorterPath: UInt8 = 1
        /// Not polled for this long, it returns every coin (the specification's "about 1 s").
        public var selfInhibitNanoseconds: UInt64 = 1_000_000_000

        public init() {}
    }

    /// An event's identity on the device: its session (0 for the first, one more after each
    /// power-up or reset) and its number in the session, unwrapped.
    public struct EventKey: Sendable, Hashable, Codable, Comparable, CustomStringConvertible {
        public var session: Int
        public var number: UInt64

        public init(session: Int, number: UInt64) {
            self.session = session
            self.number = number
        }

        public static func < (a: EventKey, b: EventKey) -> Bool { (a.session, a.number) < (b.session, b.number) }
        public var description: String { "session \(session) event \(number)" }
    }

    /// What went in.
    public enum Item: Sendable, Hashable {
        /// A genuine coin the acceptor knows, in this position.
        case coin(position: Int)
        /// A steel slug, which it recognises as one.
        case slug
        /// Anything else it does not recognise (washers, coins of no programmed type).
        case unknown
    }

    /// What it did with an item: every outcome is an event in the buffer.
    public struct Outcome: Sendable, Hashable {
        public enum Fate: String, Sendable, Hashable, Codable {
            /// Taken: it passed the credit sensor (a credit event).
            case credited
            /// A known coin returned because its position or the whole acceptor is inhibited.
            case inhibited
            /// Returned: not a coin it accepts.
            case rejected
        }

        public var fate: Fate
        public var event: EventKey
        public var result: BufferedResult
        /// The event that fell out of the buffer to make room, if any.
        public var evicted: EventKey?
    }

    /// What it did with a request.
    public struct Handling: Sendable, Hashable {
        public var reply: CCTalkFrame?
        /// The events a credit-buffer reply carries (to mark them reported once it is delivered).
        public var reported: [EventKey] = []
        /// It acknowledged a reset: call `restart` once the ACK is out.
        public var resets = false
    }

    public let settings: Settings
    public private(set) var counter: UInt8 = 0
    /// Newest first.
    public private(set) var results = Array(repeating: BufferedResult.null, count: CreditBuffer.depth)
    /// Each slot's event, newest first (nil for an empty slot).
    public private(set) var slots = [EventKey?](repeating: nil, count: CreditBuffer.depth)
    public private(set) var session = 0
    /// Events of this session, unwrapped.
    public private(set) var eventNumber: UInt64 = 0
    public private(set) var enabled = CoinPositionMask.none
    public private(set) var accepting = false
    public var fault = CCTalkFaultCode.ok
    public private(set) var lastPolledAt: UInt64?

    /// A device at power-up.
    public init(settings: Settings) {
        self.settings = settings
    }

    /// A device that was running before the host came: its counter at `counter`, the buffer
    /// holding the last events (credits of its positions in turn, numbered 1 to `counter` in
    /// session 0, as if it never wrapped), and the registers its previous host left (every
    /// position enabled, accepting).
    public init(settings: Settings, runningWithCounter counter: UInt8) {
        self.settings = settings
        let positions = settings.coinIDs.keys.sorted()
        for number in 0..<Int(counter) {
            let position = positions.isEmpty ? 1 : positions[number % positions.count]
            _ = record(.credit(position: position, sorterPath: settings.sorterPath))
        }
        enabled = CoinPositionMask(positions: positions)
        accepting = true
    }

    /// The positions that hold a coin.
    public var populated: CoinPositionMask { CoinPositionMask(positions: settings.coinIDs.keys) }

    /// Not polled lately: it returns every coin.
    public func isSelfInhibited(at now: UInt64) -> Bool {
        guard let last = lastPolledAt else { return true }
        return now &- last > settings.selfInhibitNanoseconds
    }

    /// Whether a coin in `position` would be taken now.
    public func accepts(position: Int, at now: UInt64) -> Bool {
        accepting && fault == .ok && !isSelfInhibited(at: now) && enabled.contains(position) && populated.contains(position)
    }

    /// A coin or something else goes in at `now`.
    public mutating func insert(_ item: Item, at now: UInt64) -> Outcome {
        let (fate, result): (Outcome.Fate, BufferedResult)
        switch item {
        case .coin(let position) where populated.contains(position):
            if accepts(position: position, at: now) {
                (fate, result) = (.credited, .credit(position: position, sorterPath: settings.sorterPath))
            } else {
                (fate, result) = (.inhibited, .error(CoinAcceptorError(code: 2)))
            }
        case .slug:
            (fate, result) = (.rejected, .error(CoinAcceptorError(code: 25)))
        case .coin, .unknown:
            (fate, result) = (.rejected, .error(CoinAcceptorError(code: 1)))
        }
        let (event, evicted) = record(result)
        return Outcome(fate: fate, event: event, result: result, evicted: evicted)
    }

    /// Power-up or reset: everything starts again, in a new session. Returns the events the
    /// buffer held (gone with it).
    @discardableResult
    public mutating func restart() -> [EventKey] {
        let wiped = slots.compactMap { $0 }
        counter = 0
        results = Array(repeating: .null, count: CreditBuffer.depth)
        slots = Array(repeating: nil, count: CreditBuffer.depth)
        session += 1
        eventNumber = 0
        enabled = .none
        accepting = false
        lastPolledAt = nil
        return wiped
    }

    /// Answers `frame`, received at `now`; no reply to frames for other addresses.
    public mutating func handle(_ frame: CCTalkFrame, at now: UInt64) -> Handling {
        guard frame.destination == settings.address else { return Handling() }
        lastPolledAt = now
        var handling = Handling()
        func reply(_ data: [UInt8]) -> CCTalkFrame {
            CCTalkFrame(destination: frame.source ?? CCTalkFrame.hostAddress, source: settings.address, header: 0, data: data)
        }
        let nak = CCTalkFrame(destination: frame.source ?? CCTalkFrame.hostAddress, source: settings.address, header: CCTalkHeader.nak.rawValue)
        let data = frame.data
        switch CCTalkHeader(rawValue: frame.header) {
        case .simplePoll?: handling.reply = reply([])
        case .requestEquipmentCategory?: handling.reply = reply(Array(settings.category.utf8))
        case .requestManufacturerID?: handling.reply = reply(Array(settings.manufacturer.utf8))
        case .requestProductCode?: handling.reply = reply(Array(settings.productCode.utf8))
        case .requestSoftwareRevision?: handling.reply = reply(Array(settings.softwareRevision.utf8))
        case .requestSerialNumber?:
            let serial = settings.serialNumber
            handling.reply = reply([UInt8(serial & 0xFF), UInt8(serial >> 8 & 0xFF), UInt8(serial >> 16 & 0xFF)])
        case .requestCommsRevision?: handling.reply = reply([1, 4, 7])
        case .requestPollingPriority?: handling.reply = reply([2, 20])  // 20 × 10 ms
        case .requestCoinID? where data.count == 1 && CoinPositionMask.positions.contains(Int(data[0])):
            handling.reply = reply(Array((settings.coinIDs[Int(data[0])] ?? .empty).text.utf8))
        case .modifyInhibitStatus? where data.count == 2:
            enabled = CoinPositionMask(bytes: data[0], data[1])
            handling.reply = reply([])
        case .requestInhibitStatus?: handling.reply = reply(enabled.bytes)
        case .modifyMasterInhibitStatus? where data.count == 1:
            accepting = data[0] & 1 == 1
            handling.reply = reply([])
        case .requestMasterInhibitStatus?: handling.reply = reply([accepting ? 1 : 0])
        case .performSelfCheck?: handling.reply = reply([fault.code])
        case .readOptoStates?: handling.reply = reply([0])
        case .readBufferedCredit?:
            handling.reply = reply([counter] + results.flatMap { [$0.a, $0.b] })
            handling.reported = slots.compactMap { $0 }
        case .resetDevice?:
            handling.reply = reply([])
            handling.resets = true
        default:
            handling.reply = nak
        }
        return handling
    }

    /// Puts an event at the head of the buffer; the counter goes 255 → 1.
    private mutating func record(_ result: BufferedResult) -> (EventKey, evicted: EventKey?) {
        counter = CreditBuffer.next(after: counter)
        eventNumber += 1
        let key = EventKey(session: session, number: eventNumber)
        let evicted = slots.removeLast()
        results.removeLast()
        results.insert(result, at: 0)
        slots.insert(key, at: 0)
        return (key, evicted)
    }
}
