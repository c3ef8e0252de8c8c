import CoinMechMDB

/// An MDB coin changer behind a USB/serial MDB master adapter, without a line: the host's
/// adapter lines in, the adapter's reply lines out; coins in, events into what the next POLL
/// reports. The simulator will put it on a pty; tests drive it against the host on simulated
/// time.
///
/// It behaves as MDB section 5 says a changer does: a reset (RESET, or power coming back)
/// disables every coin type and reports "changer was reset" at the next POLL; a POLL reports
/// up to 16 bytes of events and forgets them once answered (MDB's POLL is destructive); a coin
/// of an enabled type goes to its tube while the tube has room and its type routes to a tube,
/// else to the cash box; a coin of a disabled type, or an unknown one, is rejected (returned).
public struct MDBChangerDevice: Sendable {
    /// What a changer is: fixed for a session.
    public struct Settings: Sendable, Hashable {
        public var level: UInt8 = 3
        /// Packed BCD: 0x1978 is ISO 4217 978, the euro.
        public var countryCode: UInt16 = 0x1978
        public var scalingFactor: UInt8 = 5
        public var decimalPlaces: UInt8 = 2
        /// Bit n: type n can go to a tube.
        public var tubeRouting: UInt16 = 0x000F
        /// Value of each type in scaled units (the CF7900's euro coins: 5c to 2 euro).
        public var credits: [UInt8] = [1, 2, 4, 10, 20, 40]
        /// Coins a tube holds.
        public var tubeCapacity = 50
        /// Coins in each tube at power-up.
        public var initialTubes: [Int] = [18, 10, 8, 5]
        public var manufacturer = "CMS"
        public var serialNumber = "000000000001"
        public var model = "coinsim"
        /// Level 3's optional features; the alternative payout only where asked for (many
        /// changers in the field do not offer it).
        public var features: MDBChangerIdentity.Features = [.extendedDiagnostics]

        public init() {}

        /// A changer for `currency`: a type per coin the mints list from 5 minor units up, in
        /// ascending value, scaling 5; the four smallest go to tubes. Nil for a currency with no
        /// such coins listed.
        public init?(currency: String) {
            let numbers = ["USD": 0x1840, "EUR": 0x1978, "GBP": 0x1826]
            let values = FaceValues.all.filter { $0.currency == currency && $0.valueMinor >= 5 && $0.valueMinor % 5 == 0 && $0.valueMinor / 5 < 255 }
                .map(\.valueMinor).sorted()
            guard let code = numbers[currency], !values.isEmpty else { return nil }
            countryCode = UInt16(code)
            scalingFactor = 5
            credits = values.map { UInt8($0 / 5) }
            tubeRouting = UInt16((1 << min(4, values.count)) - 1)
            initialTubes = Array([18, 10, 8, 5].prefix(values.count))
        }

        /// The type of a coin worth `valueMinor`, if the changer knows one.
        public func type(ofValue value: Int64) -> Int? {
            (0..<credits.count).first { valueMinor(ofType: $0) == value }
        }

        /// What a coin of `type` is worth in minor units; nil for a type it does not use.
        public func valueMinor(ofType type: Int) -> Int64? {
            guard credits.indices.contains(type), credits[type] != 0 else { return nil }
            return Int64(credits[type]) * Int64(scalingFactor)
        }
    }

    /// Where a coin went, for the ground truth.
    public enum Fate: Sendable, Hashable {
        case tube, cashBox, rejected
    }

    /// A DISPENSE the changer is paying: `left` more coins of `type`.
    public struct Payout: Sendable, Hashable {
        public var type: Int
        public var asked: Int
        public var left: Int
        public var paid = 0
        /// The alternative payout these coins of one tube were part of (its number, from 1);
        /// nil for a DISPENSE.
        public var alternative: Int?
    }

    /// An alternative payout (level 3, PAYOUT 0Fh 02h) the changer is paying: a value, in coins
    /// it chose itself when asked, paid in order.
    public struct ValuePayout: Sendable, Hashable {
        /// Its number, from 1 (the ground truth's `valuePayouts`), and the value asked, in
        /// scaled units.
        public var number: Int
        public var askedScaled: Int
        /// The coin types still to pay, in order.
        public var queue: [Int]
        /// Coins paid per type (PAYOUT STATUS), and the value paid since the last PAYOUT VALUE
        /// POLL, in scaled units.
        public var paid = [Int](repeating: 0, count: 16)
        public var paidSincePoll = 0
        /// Coins chosen per type when asked.
        public var planned = [Int](repeating: 0, count: 16)
    }

    /// How a payout ended, for the ground truth.
    public enum PayoutEnd: String, Sendable, Hashable {
        /// Every coin asked for (or every coin the tube held) paid.
        case paid
        /// A coin stuck in the payout path: "tube jam", the rest unpaid.
        case jam
        /// A RESET or a power cycle stopped it.
        case reset
    }

    public let settings: Settings
    /// Coins in each of the 16 tubes.
    public private(set) var tubes: [Int]
    /// Coin types the host enabled (COIN TYPE); 0 after every reset.
    public private(set) var enabled: UInt16 = 0
    public private(set) var manualDispense: UInt16 = 0xFFFF
    /// The host has sent a COIN TYPE (any mask): the last step of setting a changer up.
    public private(set) var coinTypeSet = false
    /// Events not yet reported, oldest first (each one or two bytes).
    private var events: [[UInt8]] = []
    private var masterMode = false
    /// The DISPENSE being paid, one coin per `payOne`; while it lasts every POLL reply says
    /// "payout busy" and another DISPENSE gets no answer.
    public private(set) var payout: Payout?
    /// How many bytes its TUBE STATUS replies carry (nil: all 18); fewer plays a changer that
    /// counts only its first tubes.
    public var tubeStatusBytes: Int?
    /// The next TUBE STATUS counts this tube `coins` more than it holds, once: a level sensor
    /// that has not caught up with the coins just paid (the count after a DISPENSE disagrees
    /// with it; the next one is right).
    public var tubeSensorLag: (type: Int, coins: Int)?
    /// Payouts ended since the last `takeEndedPayouts`, with how.
    private var endedPayouts: [(Payout, PayoutEnd)] = []
    /// The alternative payout being paid; while it lasts every POLL reply says "payout busy",
    /// a PAYOUT VALUE POLL answers the value paid since the last one, PAYOUT STATUS only ACKs.
    public private(set) var valuePayout: ValuePayout?
    /// The last alternative payout's coins per type, once it is over (PAYOUT STATUS).
    private var lastValuePaid = [Int](repeating: 0, count: 16)
    /// Alternative payouts begun, and those ended since the last `takeEndedValuePayouts`.
    private var valuePayoutsBegun = 0
    private var endedValuePayouts: [(ValuePayout, PayoutEnd)] = []

    /// Paying a DISPENSE or an alternative payout.
    public var isPaying: Bool { payout != nil || valuePayout != nil }

    public init(settings: Settings = Settings()) {
        self.settings = settings
        tubes = (0..<16).map { $0 < settings.initialTubes.count ? min(settings.initialTubes[$0], settings.tubeCapacity) : 0 }
        reset()
    }

    /// Power off and on, or a RESET: every coin type disabled, the events gone, and "changer
    /// was reset" waiting for the next POLL.
    public mutating func reset() {
        if let payout { endedPayouts.append((payout, .reset)) }
        payout = nil
        finishValuePayout(.reset)
        enabled = 0
        manualDispense = 0xFFFF
        events = [[MDBChangerStatus.changerWasReset.rawValue]]
    }

    /// A coin of `type` goes in (nil: something the changer does not recognise).
    public mutating func insert(type: Int?) -> Fate {
        guard let type, (0..<16).contains(type), enabled & (1 << type) != 0, settings.valueMinor(ofType: type) != nil else {
            // Returned: reported as a coin routed to reject when its type is known.
            if let type, (0..<16).contains(type) { queue([0x70 | UInt8(type), UInt8(min(tubes[type], 255))]) }
            return .rejected
        }
        if settings.tubeRouting & (1 << type) != 0, tubes[type] < settings.tubeCapacity {
            tubes[type] += 1
            queue([0x50 | UInt8(type), UInt8(min(tubes[type], 255))])
            return .tube
        }
        queue([0x40 | UInt8(type), UInt8(min(tubes[type], 255))])
        return .cashBox
    }

    /// The adapter's answer to one line from the host (without its LF).
    public mutating func handle(_ text: Substring) -> MDBAdapterReply {
        guard let command = MDBAdapterCommand(line: text) else { return .peripheral(.noAnswer) }
        switch command {
        case .version: return .version("1.0.0.0,C015E000")
        case .masterMode(let on):
            masterMode = on
            return .masterMode(acknowledged: true)
        case .responseTimeout: return .configuration(acknowledged: true)
        case .busReset:
            reset()
            return .peripheral(.ack)
        case .transaction(let transaction):
            guard masterMode, transaction.address == MDBChangerCommand.address else { return .peripheral(.noAnswer) }
            return .peripheral(answer(transaction))
        }
    }

    private mutating func answer(_ transaction: MDBTransaction) -> MDBAdapterReply.Answer {
        let data = transaction.data
        switch transaction.command & 0x07 {
        case 0:
            reset()
            return .ack
        case 1:
            return .data([settings.level, UInt8(settings.countryCode >> 8), UInt8(settings.countryCode & 0xFF), settings.scalingFactor,
                                    settings.decimalPlaces, UInt8(settings.tubeRouting >> 8), UInt8(settings.tubeRouting & 0xFF)] + settings.credits)
        case 2:
            var counted = tubes
            if let lag = tubeSensorLag, counted.indices.contains(lag.type) { counted[lag.type] += lag.coins }
            tubeSensorLag = nil
            return .data(Array(([0, 0] + counted.map { UInt8(min($0, 255)) }).prefix(tubeStatusBytes ?? 18)))
        case 3:
            // Payout busy is a state, said in every reply while it lasts, not an event.
            var reply: [UInt8] = isPaying ? [MDBChangerStatus.payoutBusy.rawValue] : []
            guard !events.isEmpty || !reply.isEmpty else { return .ack }
            while let next = events.first, reply.count + next.count <= 16 {
                reply += next
                events.removeFirst()
            }
            return .data(reply)
        case 4:
            guard data.count == 4 else { return .noAnswer }
            enabled = UInt16(data[0]) << 8 | UInt16(data[1])
            manualDispense = UInt16(data[2]) << 8 | UInt16(data[3])
            coinTypeSet = true
            return .ack
        case 5:
            // Busy paying: no answer (MDB: a busy changer may not respond). The tube pays what
            // it holds, one coin per `payOne`.
            guard data.count == 1, !isPaying else { return .noAnswer }
            let type = Int(data[0] & 0x0F), count = Int(data[0] >> 4)
            let payable = min(count, tubes[type])
            payout = Payout(type: type, asked: count, left: payable)
            if payable == 0 { finishPayout(.paid) }
            return .ack
        case 7 where settings.level >= 3:
            switch data.first {
            case 0x00:
                let text = Array((settings.manufacturer.padding(3) + settings.serialNumber.padding(12) + settings.model.padding(12)).utf8)
                let features = settings.features.rawValue
                return .data(text + [0x01, 0x00, UInt8(features >> 24), UInt8(features >> 16 & 0xFF), UInt8(features >> 8 & 0xFF), UInt8(features & 0xFF)])
            case 0x01: return .ack
            case 0x02:
                // PAYOUT: busy paying another, no answer; else the coins chosen now, largest first.
                guard settings.features.contains(.alternativePayout), data.count == 2, data[1] > 0, !isPaying else { return .noAnswer }
                startValuePayout(scaled: Int(data[1]))
                return .ack
            case 0x03:
                // PAYOUT STATUS: ACK alone while paying, else the last payout's coins per type.
                guard settings.features.contains(.alternativePayout) else { return .noAnswer }
                return valuePayout != nil ? .ack : .data(lastValuePaid.map { UInt8(min($0, 255)) })
            case 0x04:
                // PAYOUT VALUE POLL: the value paid since the last one while paying (00: none
                // yet); ACK alone once the payout is over.
                guard settings.features.contains(.alternativePayout) else { return .noAnswer }
                if var current = valuePayout {
                    defer { current.paidSincePoll = 0; valuePayout = current }
                    return .data([UInt8(min(current.paidSincePoll, 255))])
                }
                return .ack
            case 0x05: return .data([0x03, 0x00])
            default: return .noAnswer
            }
        default:
            return .noAnswer
        }
    }

    /// One coin of the payout under way leaves its tube (the simulator calls this at the
    /// changer's pace); nil when none is under way, else the type paid.
    @discardableResult
    public mutating func payOne() -> Int? {
        if var current = valuePayout {
            let type = current.queue.removeFirst()
            tubes[type] -= 1
            current.paid[type] += 1
            current.paidSincePoll += Int(settings.credits[type])
            valuePayout = current
            if current.queue.isEmpty { finishValuePayout(.paid) }
            return type
        }
        guard var current = payout else { return nil }
        tubes[current.type] -= 1
        current.left -= 1
        current.paid += 1
        payout = current
        if current.left == 0 { finishPayout(.paid) }
        return current.type
    }

    /// The payout under way stops with a coin stuck: "tube jam" in the next POLL, the rest unpaid.
    public mutating func jamPayout() {
        guard isPaying else { return }
        finishPayout(.jam)
        finishValuePayout(.jam)
        queue([MDBChangerStatus.tubeJam.rawValue])
    }

    /// Alternative payouts that ended since the last call, oldest first (their coins are in
    /// `takeEndedPayouts` too, a row per tube).
    public mutating func takeEndedValuePayouts() -> [(ValuePayout, PayoutEnd)] {
        defer { endedValuePayouts.removeAll() }
        return endedValuePayouts
    }

    /// Payouts that ended since the last call, oldest first.
    public mutating func takeEndedPayouts() -> [(Payout, PayoutEnd)] {
        defer { endedPayouts.removeAll() }
        return endedPayouts
    }

    /// Chooses the coins for `scaled` units as a changer does: the largest coin that still
    /// fits, from the tubes that hold one, until the value is made or nothing fits (it pays
    /// short then: PAYOUT STATUS says what it paid).
    private mutating func startValuePayout(scaled: Int) {
        var left = scaled
        var held = tubes
        valuePayoutsBegun += 1
        var current = ValuePayout(number: valuePayoutsBegun, askedScaled: scaled, queue: [])
        let types = (0..<min(settings.credits.count, 16)).filter { settings.tubeRouting & (1 << $0) != 0 && settings.credits[$0] > 0 }
            .sorted { settings.credits[$0] > settings.credits[$1] }
        while let type = types.first(where: { Int(settings.credits[$0]) <= left && held[$0] > 0 }) {
            left -= Int(settings.credits[type])
            held[type] -= 1
            current.queue.append(type)
            current.planned[type] += 1
        }
        valuePayout = current
        if current.queue.isEmpty { finishValuePayout(.paid) }
    }

    /// The alternative payout ends: each type it paid from is a payout in the ground truth.
    private mutating func finishValuePayout(_ end: PayoutEnd) {
        guard let current = valuePayout else { return }
        for type in 0..<16 where current.planned[type] > 0 || current.paid[type] > 0 {
            endedPayouts.append((Payout(type: type, asked: current.planned[type], left: 0, paid: current.paid[type], alternative: current.number), end))
        }
        endedValuePayouts.append((current, end))
        lastValuePaid = current.paid
        valuePayout = nil
    }

    private mutating func finishPayout(_ end: PayoutEnd) {
        guard let payout else { return }
        endedPayouts.append((payout, end))
        self.payout = nil
    }

    /// The coin types it takes, as a COIN TYPE would set them (a test's shortcut).
    public mutating func enable(_ types: UInt16) {
        enabled = types
    }

    /// A slug goes in: returned, and counted in the next POLL.
    public mutating func insertSlug() {
        queue([0x21])
    }

    /// The changer reports `status` in its next POLL reply.
    public mutating func report(_ status: MDBChangerStatus) {
        queue([status.rawValue])
    }

    private mutating func queue(_ event: [UInt8]) { events.append(event) }
}

extension String {
    /// Cut or padded with spaces to `width` ASCII characters, as MDB's text fields are.
    fileprivate func padding(_ width: Int) -> String {
        String(prefix(width)) + String(repeating: " ", count: max(0, width - count))
    }
}
