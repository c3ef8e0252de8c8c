import CoinMechCCTalk

/// A ccTalk payout hopper's behaviour without a line: request frames in, replies out; coins out
/// one every `payIntervalNanoseconds` while it pays. `CCTalkSimulator` puts hoppers on the
/// acceptor's bus; tests drive one on simulated time.
///
/// It powers up (and resets) with its event counter at 0, payout disabled and "power-up
/// detected" set, and pays only after the host enabled it (164 with A5h). A dispense (167) is
/// counted (the event counter, 1 to 255 and round to 1), then paid coin by coin; the host
/// follows it with 166: coins remaining, and the last payout's paid and unpaid counts, which
/// the hopper keeps through a reset and a power cut — what a host settles from when it lost
/// track. A payout stops short when the hopper runs empty, jams, loses power or is stopped
/// (172). It answers the headers a hopper host uses, and NAKs the others.
public struct CCTalkHopper: Sendable {
    /// What a hopper is: fixed for a session.
    public struct Settings: Sendable, Hashable {
        public var address: UInt8 = 3
        public var category = "Payout"
        public var manufacturer = "CoinMech"
        public var productCode = "coinsim-hopper"
        public var serialNumber: UInt32 = 0x00_20_03
        public var softwareRevision = "coinsim-1"
        /// The coin it pays (header 171).
        public var coinID = CoinID.empty
        /// The one form of header 167 it takes.
        public var dispense = DispenseVariant.plain
        /// Coins in it at the start.
        public var coins = 50
        /// While it pays, a coin drops this long after the dispense and after each other.
        public var payIntervalNanoseconds: UInt64 = 80_000_000
        /// Coins paid in the session after which the next one jams (once).
        public var jamAfter: Int?
        /// Coins paid in the session after which the next one, mid-payout, is where power is
        /// lost (once), for `powerOffNanoseconds`.
        public var powerDownAfter: Int?
        public var powerOffNanoseconds: UInt64 = 300_000_000
        /// After each power-up, reset or exchange, the first this many requests for its serial
        /// number (242) are refused with NAK: a hopper that does not say who it is at once.
        public var hideSerialAsks = 0

        public init() {}
    }

    /// Header 167's forms: the count alone, or the hopper's serial number (least significant
    /// byte first) before it, so that a dispense meant for another hopper is refused.
    public enum DispenseVariant: String, Sendable, Hashable {
        case plain
        case serial
    }

    /// One dispense the hopper took, as it went.
    public struct Payout: Sendable, Hashable {
        /// How it ended; the raw values are the ground truth's.
        public enum End: String, Sendable, Hashable {
            /// Every coin asked for paid.
            case done
            /// The hopper ran out: "payout timeout", the rest unpaid.
            case empty
            /// A coin stuck: "absolute maximum current exceeded", the rest unpaid.
            case jam
            /// Power went: "power down during payout" at the next power-up, the rest unpaid.
            case powerDown = "power_down"
            /// The host sent 172.
            case emergencyStop = "emergency_stop"
            /// The host reset the hopper (header 1) before it was done.
            case reset
        }

        /// The event counter the dispense gave.
        public var counter: UInt8
        public var asked: Int
        /// Coins that dropped.
        public var paid = 0
        /// Coins left unpaid when it stopped (0 while it goes on).
        public var unpaid = 0
        /// Nil while it goes on.
        public var ended: End?

        public init(counter: UInt8, asked: Int) {
            self.counter = counter
            self.asked = asked
        }
    }

    // Register bits (ccTalk part 2, header 163) the hopper sets.
    static let maximumCurrentExceeded: UInt8 = 1 << 0  // register 1
    static let payoutTimeout: UInt8 = 1 << 1  // register 1
    static let powerUpDetected: UInt8 = 1 << 6  // register 1
    static let payoutDisabled: UInt8 = 1 << 7  // register 1
    static let powerDownDuringPayout: UInt8 = 1 << 0  // register 3
    /// Per register, the flags that refuse every dispense until a reset clears them.
    static let needsResetMasks: [UInt8] = [0b0011_1001, 0b0001_1001, 0b0000_1111]

    public let settings: Settings
    /// Coins in it now.
    public private(set) var level: Int
    /// 0 after power-up and reset; one more per dispense taken, 255 → 1.
    public private(set) var eventCounter: UInt8 = 0
    /// Payout enabled (164 with A5h); register 1 bit 7 says the opposite.
    public private(set) var enabled = false
    /// Registers 1 to 3 without register 1 bit 7, which is `enabled`.
    private var flags: [UInt8] = [CCTalkHopper.powerUpDetected, 0, 0]
    /// Every dispense it took in the session, oldest first; the last one may go on.
    public private(set) var payouts: [Payout] = []
    /// When the next coin drops, while it pays.
    public private(set) var nextCoinAt: UInt64?
    /// Without power until then: it answers nothing.
    public private(set) var poweredOffUntil: UInt64?
    /// Coins that dropped in the session: each counted once, when it leaves the hopper.
    public private(set) var paidCoins = 0
    /// Its serial number: the settings' until it is exchanged for another hopper.
    public private(set) var serialNumber: UInt32
    /// Times it was exchanged for another hopper, and serial number requests it refused.
    public private(set) var exchanges = 0
    public private(set) var hiddenSerials = 0
    /// Serial number requests refused since its last power-up.
    private var serialAsksRefused = 0
    /// Where this hopper's own payouts begin in `payouts` (an exchanged one knows none before).
    private var firstPayout = 0
    public private(set) var jams = 0
    public private(set) var empties = 0
    public private(set) var powerDowns = 0
    private var jamPlayed = false
    private var powerDownPlayed = false

    /// A hopper at power-up.
    public init(settings: Settings) {
        self.settings = settings
        level = settings.coins
        serialNumber = settings.serialNumber
    }

    /// The payout under way, if any.
    public var payout: Payout? {
        guard let last = payouts.last, last.ended == nil else { return nil }
        return last
    }

    /// Header 166's four bytes: event counter, coins remaining, the last payout's paid and
    /// unpaid counts.
    public var status: [UInt8] {
        let last = payouts.count > firstPayout ? payouts.last : nil
        return [eventCounter, UInt8(clamping: payout.map { $0.asked - $0.paid } ?? 0), UInt8(clamping: last?.paid ?? 0),
                UInt8(clamping: last?.unpaid ?? 0)]
    }

    /// Header 163's three registers.
    public var registers: [UInt8] { [flags[0] | (enabled ? 0 : Self.payoutDisabled), flags[1], flags[2]] }

    /// A flag is set that refuses dispenses until a reset.
    public var needsReset: Bool { zip(registers, Self.needsResetMasks).contains { $0 & $1 != 0 } }

    /// When `advance` next has something to do: a coin to drop, or the power to come back.
    public var nextEventAt: UInt64? { poweredOffUntil ?? nextCoinAt }

    /// Plays what is due by `now`: coins dropping, the payout stopping short, the power going
    /// and coming back. Call it with a time that never goes back.
    public mutating func advance(to now: UInt64) {
        while true {
            if let until = poweredOffUntil {
                guard until <= now else { return }
                powerUp()
                continue
            }
            guard let due = nextCoinAt, due <= now else { return }
            coinDue(at: due)
        }
    }

    /// Answers `frame`, received at `now` (what was due by then played first); nil for frames
    /// to other addresses and while the power is off. A reset (header 1) is only acknowledged
    /// here: call `restart` once the ACK is out.
    public mutating func handle(_ frame: CCTalkFrame, at now: UInt64) -> CCTalkFrame? {
        guard frame.destination == settings.address else { return nil }
        advance(to: now)
        guard poweredOffUntil == nil else { return nil }
        let host = frame.source ?? CCTalkFrame.hostAddress
        func reply(_ data: [UInt8]) -> CCTalkFrame {
            CCTalkFrame(destination: host, source: settings.address, header: CCTalkHeader.reply.rawValue, data: data)
        }
        let nak = CCTalkFrame(destination: host, source: settings.address, header: CCTalkHeader.nak.rawValue)
        let data = frame.data
        switch CCTalkHeader(rawValue: frame.header) {
        case .simplePoll?: return reply([])
        case .requestEquipmentCategory?: return reply(Array(settings.category.utf8))
        case .requestManufacturerID?: return reply(Array(settings.manufacturer.utf8))
        case .requestProductCode?: return reply(Array(settings.productCode.utf8))
        case .requestSoftwareRevision?: return reply(Array(settings.softwareRevision.utf8))
        case .requestSerialNumber?:
            if serialAsksRefused < settings.hideSerialAsks {
                serialAsksRefused += 1
                hiddenSerials += 1
                return nak
            }
            let serial = serialNumber
            return reply([UInt8(serial & 0xFF), UInt8(serial >> 8 & 0xFF), UInt8(serial >> 16 & 0xFF)])
        case .requestCommsRevision?: return reply([1, 4, 6])
        case .requestHopperCoin?: return reply(Array(settings.coinID.text.utf8))
        case .enableHopper? where data.count == 1:
            enabled = data[0] == 0xA5
            return reply([])
        case .testHopper?: return reply(registers)
        case .requestHopperStatus?: return reply(status)
        case .dispenseHopperCoins?:
            guard let count = dispenseCount(data), count > 0, enabled, payout == nil, !needsReset else { return nak }
            eventCounter = eventCounter == 255 ? 1 : eventCounter + 1
            payouts.append(Payout(counter: eventCounter, asked: Int(count)))
            nextCoinAt = now &+ settings.payIntervalNanoseconds
            return reply([eventCounter])
        case .emergencyStop?:
            enabled = false
            guard let payout else { return reply([0]) }
            stop(.emergencyStop)
            return reply([UInt8(clamping: payout.asked - payout.paid)])
        case .resetDevice?: return reply([])
        default: return nak
        }
    }

    /// A reset, once its ACK is out, at `now`: a payout under way stops (the rest unpaid), the
    /// event counter goes back to 0, payout is disabled and every fault flag cleared, with
    /// "power-up detected" set. The last payout's counts stay.
    public mutating func restart(at now: UInt64) {
        advance(to: now)
        guard poweredOffUntil == nil else { return }
        if payout != nil { stop(.reset) }
        eventCounter = 0
        enabled = false
        flags = [Self.powerUpDetected, 0, 0]
        serialAsksRefused = 0
    }

    /// An operator takes it out and puts another hopper at its address: another serial number,
    /// its counter from 0 and no payout of its own yet, as at power-up; it holds the same coins
    /// (a spare loaded alike). Only while it is not paying.
    public mutating func exchange() {
        guard payout == nil, poweredOffUntil == nil else { return }
        exchanges += 1
        serialNumber = settings.serialNumber &+ 0x01_00_00 &* UInt32(exchanges)
        firstPayout = payouts.count
        eventCounter = 0
        enabled = false
        flags = [Self.powerUpDetected, 0, 0]
        serialAsksRefused = 0
    }

    /// An operator loads `coins` into it.
    public mutating func load(_ coins: Int) {
        level += coins
    }

    /// The count of a dispense in the configured form; nil for the other form, a wrong
    /// length or another hopper's serial number.
    private func dispenseCount(_ data: [UInt8]) -> UInt8? {
        switch settings.dispense {
        case .plain:
            return data.count == 1 ? data[0] : nil
        case .serial:
            guard data.count == 4 else { return nil }
            let serial = UInt32(data[0]) | UInt32(data[1]) << 8 | UInt32(data[2]) << 16
            return serial == serialNumber & 0xFF_FFFF ? data[3] : nil
        }
    }

    /// A coin of the payout under way is due at `time`: it drops, or the payout stops short.
    private mutating func coinDue(at time: UInt64) {
        guard payout != nil else {
            nextCoinAt = nil
            return
        }
        // The faults count coins over the whole session, not per payout, so that a scenario
        // can aim one at the middle of a given payout.
        if let after = settings.powerDownAfter, !powerDownPlayed, paidCoins >= after {
            powerDownPlayed = true
            powerDowns += 1
            stop(.powerDown)
            poweredOffUntil = time &+ settings.powerOffNanoseconds
            return
        }
        if let after = settings.jamAfter, !jamPlayed, paidCoins >= after {
            jamPlayed = true
            jams += 1
            flags[0] |= Self.maximumCurrentExceeded
            stop(.jam)
            return
        }
        guard level > 0 else { return runOut() }
        level -= 1
        paidCoins += 1
        payouts[payouts.count - 1].paid += 1
        let last = payouts[payouts.count - 1]
        if last.paid == last.asked {
            stop(.done)
        } else if level == 0 {
            // Nothing left to pay the rest with: it stops at once rather than run the motor.
            runOut()
        } else {
            nextCoinAt = time &+ settings.payIntervalNanoseconds
        }
    }

    private mutating func runOut() {
        empties += 1
        flags[0] |= Self.payoutTimeout
        stop(.empty)
    }

    /// The payout under way ends: what is not paid is unpaid.
    private mutating func stop(_ end: Payout.End) {
        let index = payouts.count - 1
        payouts[index].unpaid = payouts[index].asked - payouts[index].paid
        payouts[index].ended = end
        nextCoinAt = nil
    }

    /// The power comes back: as a reset, with "power down during payout" set (the only way the
    /// power goes here is mid-payout).
    private mutating func powerUp() {
        poweredOffUntil = nil
        eventCounter = 0
        enabled = false
        flags = [Self.powerUpDetected, 0, Self.powerDownDuringPayout]
        serialAsksRefused = 0
    }
}
