import CoinMechCCTalk
import CoinMechSettings

/// One entry of `cctalk.hoppers`: a payout hopper on the acceptor's bus, at an address of its
/// own, that the host pays change from. Every key is documented in docs/SIMULATOR.md.
///
///     cctalk:
///       hoppers:
///         - {address: 3, coin: EU200A, value_minor: 200, coins: 20}
///         - {address: 4, coin: EU050A, value_minor: 50, dispense: serial, faults: {jam_after: 7}}
///         - {address: 5, coin: EU010A, value_minor: 10, faults: {lost_reply: 0.03, nak: 0.01, busy: 0.02,
///            hide_serial: 2, exchange_after: 3}}
public struct CCTalkHopperScenario: Sendable, Hashable {
    public var address: UInt8
    /// The coin it pays (header 171's answer).
    public var coin: CoinID
    /// What one of its coins is worth, for the ground truth: a hopper does not know.
    public var valueMinor: Int64
    /// Coins in it at the start.
    public var coins = 50
    public var serialNumber: UInt32
    /// A coin drops every so often while it pays.
    public var payIntervalMilliseconds = 80.0
    /// The one form of header 167 it takes.
    public var dispense = CCTalkHopper.DispenseVariant.plain
    public var faults = Faults()

    public struct Faults: Sendable, Hashable {
        /// Coins paid in the session after which the next one jams: the payout stops short.
        public var jamAfter: Int?
        /// Coins paid in the session after which it loses power at its next coin, mid-payout,
        /// for `powerOffMilliseconds`.
        public var powerDownAfter: Int?
        public var powerOffMilliseconds = 300.0
        /// The line: the chance that its reply to a request is lost (it acted on the request),
        /// that it refuses one with NAK, or answers BUSY (it did nothing of it).
        public var lostReply = 0.0
        public var nak = 0.0
        public var busy = 0.0
        /// After each power-up, reset or exchange, the first this many serial number requests
        /// are refused: the host must wait to know who it is.
        public var hideSerial = 0
        /// After its Nth dispense has ended and the host has moved on (a dispense to any hopper,
        /// or payouts disabled again once the payout is settled), it is exchanged for another
        /// hopper holding the same coins: another serial number, its counter from 0.
        public var exchangeAfter: Int?

        public init() {}
    }

    /// A hopper's serial number unless the scenario gives one: distinct per address.
    public static func defaultSerialNumber(address: UInt8) -> UInt32 { 0x00_20_00 + UInt32(address) }

    public init(address: UInt8, coin: CoinID, valueMinor: Int64) {
        self.address = address
        self.coin = coin
        self.valueMinor = valueMinor
        serialNumber = Self.defaultSerialNumber(address: address)
    }

    /// What the model plays.
    public var device: CCTalkHopper.Settings {
        var device = CCTalkHopper.Settings()
        device.address = address
        device.coinID = coin
        device.serialNumber = serialNumber
        device.dispense = dispense
        device.coins = coins
        device.payIntervalNanoseconds = UInt64(payIntervalMilliseconds * 1e6)
        device.jamAfter = faults.jamAfter
        device.powerDownAfter = faults.powerDownAfter
        device.powerOffNanoseconds = UInt64(faults.powerOffMilliseconds * 1e6)
        device.hideSerialAsks = faults.hideSerial
        return device
    }

    static let keys: Set<String> = ["address", "coin", "value_minor", "coins", "serial_number", "pay_interval_ms", "dispense", "faults"]

    /// Reads the `cctalk.hoppers` list. Addresses must differ from the host's, the acceptor's
    /// and each other's: two devices answering one address garble each other's replies.
    public static func parse(_ tables: [SettingsTable], acceptorAddress: UInt8) throws(SettingsError) -> [CCTalkHopperScenario] {
        var hoppers: [CCTalkHopperScenario] = []
        for table in tables {
            let hopper = try parse(table)
            if hopper.address == acceptorAddress {
                throw table.error("address", "\(hopper.address) is the acceptor's address (cctalk.address)")
            }
            if hoppers.contains(where: { $0.address == hopper.address }) {
                throw table.error("address", "another hopper already has address \(hopper.address)")
            }
            hoppers.append(hopper)
        }
        return hoppers
    }

    /// Reads one hopper's table; errors name the file, the line and the key.
    static func parse(_ table: SettingsTable) throws(SettingsError) -> CCTalkHopperScenario {
        try table.rejectUnknownKeys(keys)
        guard let address = try table.int("address") else { throw table.error("address", "a hopper needs an address (2 to 255)") }
        guard (2...255).contains(address) else { throw table.error("address", "must be 2 to 255 (1 is the host's)") }
        guard let text = try table.string("coin") else { throw table.error("coin", "a hopper needs the coin id it pays, e.g. EU200A") }
        guard text.count == 6, text.allSatisfy({ $0.isASCII && !$0.isWhitespace }), !CoinID(text).isEmpty else {
            throw table.error("coin", "a coin id is six characters, e.g. EU200A")
        }
        guard let value = try table.int("value_minor") else { throw table.error("value_minor", "a hopper needs its coin's value in minor units") }
        guard value > 0 else { throw table.error("value_minor", "must be above 0") }
        var s = CCTalkHopperScenario(address: UInt8(address), coin: CoinID(text), valueMinor: Int64(value))
        s.coins = try table.int("coins", in: 0...10_000) ?? s.coins
        if let serial = try table.int("serial_number") {
            guard (0...0xFF_FFFF).contains(serial) else { throw table.error("serial_number", "must fit in three bytes (0 to 16777215)") }
            s.serialNumber = UInt32(serial)
        }
        s.payIntervalMilliseconds = try CCTalkScenario.milliseconds(table, "pay_interval_ms", 10...5_000) ?? s.payIntervalMilliseconds
        if let dispense = try table.string("dispense") {
            guard let variant = CCTalkHopper.DispenseVariant(rawValue: dispense) else { throw table.error("dispense", "must be plain or serial") }
            s.dispense = variant
        }
        if let faults = try table.table("faults") {
            try faults.rejectUnknownKeys(["jam_after", "power_down_after", "power_off_ms", "lost_reply", "nak", "busy", "hide_serial", "exchange_after"])
            for (key, path) in [("lost_reply", \Faults.lostReply), ("nak", \Faults.nak), ("busy", \Faults.busy)] {
                guard let chance = try faults.double(key) else { continue }
                guard (0...1).contains(chance) else { throw faults.error(key, "must be a chance from 0 to 1") }
                s.faults[keyPath: path] = chance
            }
            guard s.faults.lostReply + s.faults.nak + s.faults.busy <= 1 else { throw faults.error("lost_reply", "lost_reply, nak and busy add up to more than 1") }
            s.faults.hideSerial = try faults.int("hide_serial", in: 0...100) ?? 0
            if let after = try faults.int("exchange_after") {
                guard after >= 1 else { throw faults.error("exchange_after", "must be a number of dispenses, 1 or more") }
                s.faults.exchangeAfter = after
            }
            for (key, path) in [("jam_after", \Faults.jamAfter), ("power_down_after", \Faults.powerDownAfter)] {
                guard let count = try faults.int(key) else { continue }
                guard count >= 0 else { throw faults.error(key, "must be a number of coins paid, 0 or more") }
                s.faults[keyPath: path] = count
            }
            s.faults.powerOffMilliseconds = try CCTalkScenario.milliseconds(faults, "power_off_ms", 1...60_000) ?? s.faults.powerOffMilliseconds
        }
        return s
    }
}
