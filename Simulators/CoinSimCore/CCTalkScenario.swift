import CoinFacts
import CoinMechCCTalk
import CoinMechSettings

/// The `cctalk` block of a scenario: the ccTalk coin acceptor `coinsim --protocol cctalk`
/// plays, its faults, and the payout hoppers beside it on the bus. Every key is documented in docs/SIMULATOR.md.
public struct CCTalkScenario: Sendable, Hashable {
    public var address: UInt8 = CCTalkFrame.coinAcceptorAddress
    public var checksum: CCTalkChecksum = .simple
    /// The line gives the host its own bytes back (a single-wire bus).
    public var echo = false
    /// Position → coin id; nil: the scenario currency's coins in table order from position 1.
    public var coins: [Int: CoinID]?
    public var sorterPath: UInt8 = 1
    public var serialNumber: UInt32 = 12_345_678
    public var manufacturer = "CoinMech"
    public var productCode = "coinsim"
    /// The event counter at the start: above 0, the acceptor ran before the host came and its
    /// buffer holds the last events (never to be credited by this host).
    public var counter: UInt8 = 0
    /// From a request's last byte to its reply's first.
    public var replyMilliseconds = 2.0
    /// Not polled this long, the acceptor inhibits itself.
    public var selfInhibitMilliseconds = 1000.0
    /// The first insertion comes this long after the host opened the device.
    public var startMilliseconds = 1000.0
    public var faults = Faults()
    /// Payout hoppers on the same bus, each at its own address (`cctalk.hoppers`).
    public var hoppers: [CCTalkHopperScenario] = []

    public struct Faults: Sendable, Hashable {
        /// Chances per buffer poll (header 229) that the reply is not sent, is a NAK, is a
        /// BUSY, or has a wrong checksum.
        public var lostReply = 0.0
        public var nak = 0.0
        public var busy = 0.0
        public var badChecksum = 0.0
        /// At these insertions, `overrunCoins` items go in back to back, faster than any host
        /// polls: more than five events between two polls.
        public var overrunAt: [Int] = []
        public var overrunCoins = 7
        /// The acceptor resets itself before these insertions (counter back to 0).
        public var resetAt: [Int] = []
        /// The acceptor loses power before these insertions, for `powerOffMilliseconds`.
        public var powerCycleAt: [Int] = []
        public var powerOffMilliseconds = 300.0
    }

    public init() {}

    /// The positions and ids the acceptor holds for `currency`.
    public func coinIDs(currency: String) -> [Int: CoinID] {
        if let coins { return coins }
        let table = (CoinTables.table(for: currency) ?? []).filter { (1...999).contains($0.valueMinor) }
        var ids: [Int: CoinID] = [:]
        for (index, spec) in table.prefix(16).enumerated() { ids[index + 1] = CoinID.standard(currency: currency, valueMinor: spec.valueMinor) }
        return ids
    }

    static let keys: Set<String> = [
        "address", "checksum", "echo", "coins", "sorter_path", "serial_number", "manufacturer", "product_code", "counter",
        "reply_ms", "self_inhibit_ms", "start_ms", "faults", "hoppers",
    ]

    /// Reads the `cctalk` table; errors name the file, the line and the key.
    public static func parse(_ table: SettingsTable) throws(SettingsError) -> CCTalkScenario {
        try table.rejectUnknownKeys(keys)
        var s = CCTalkScenario()
        if let address = try table.int("address") {
            guard (1...255).contains(address), address != Int(CCTalkFrame.hostAddress) else {
                throw table.error("address", "must be 2 to 255 (1 is the host's)")
            }
            s.address = UInt8(address)
        }
        if let checksum = try table.string("checksum") {
            guard let kind = CCTalkChecksum(rawValue: checksum) else { throw table.error("checksum", "must be simple or crc16") }
            s.checksum = kind
        }
        s.echo = try table.bool("echo") ?? s.echo
        if let coins = try table.table("coins") {
            var ids: [Int: CoinID] = [:]
            for key in coins.keys {
                guard let position = Int(key), CoinPositionMask.positions.contains(position) else {
                    throw coins.error(key, "coin positions are 1 to 16")
                }
                guard let text = try coins.string(key), text.count == 6, text.allSatisfy({ $0.isASCII && !$0.isWhitespace }) else {
                    throw coins.error(key, "a coin id is six characters, e.g. EU200A")
                }
                if text != CoinID.empty.text { ids[position] = CoinID(text) }
            }
            s.coins = ids
        }
        if let path = try table.int("sorter_path") {
            guard (1...8).contains(path) else { throw table.error("sorter_path", "must be 1 to 8") }
            s.sorterPath = UInt8(path)
        }
        if let serial = try table.int("serial_number") {
            guard (0...0xFF_FFFF).contains(serial) else { throw table.error("serial_number", "must fit in three bytes (0 to 16777215)") }
            s.serialNumber = UInt32(serial)
        }
        s.manufacturer = try text(table, "manufacturer") ?? s.manufacturer
        s.productCode = try text(table, "product_code") ?? s.productCode
        if let counter = try table.int("counter") {
            guard (0...255).contains(counter) else { throw table.error("counter", "must be 0 to 255") }
            s.counter = UInt8(counter)
        }
        s.replyMilliseconds = try milliseconds(table, "reply_ms", 0...1000) ?? s.replyMilliseconds
        s.selfInhibitMilliseconds = try milliseconds(table, "self_inhibit_ms", 1...600_000) ?? s.selfInhibitMilliseconds
        s.startMilliseconds = try milliseconds(table, "start_ms", 0...600_000) ?? s.startMilliseconds
        if let faults = try table.table("faults") {
            try faults.rejectUnknownKeys([
                "lost_reply", "nak", "busy", "bad_checksum", "overrun_at", "overrun_coins", "reset_at", "power_cycle_at", "power_off_ms",
            ])
            var f = Faults()
            f.lostReply = try Scenario.fraction(faults, "lost_reply") ?? 0
            f.nak = try Scenario.fraction(faults, "nak") ?? 0
            f.busy = try Scenario.fraction(faults, "busy") ?? 0
            f.badChecksum = try Scenario.fraction(faults, "bad_checksum") ?? 0
            guard f.lostReply + f.nak + f.busy + f.badChecksum <= 1 else {
                throw table.error("faults", "lost_reply, nak, busy and bad_checksum add up to more than 1")
            }
            f.overrunAt = try Scenario.insertionNumbers(faults, "overrun_at")
            if let coins = try faults.int("overrun_coins") {
                guard (6...50).contains(coins) else { throw faults.error("overrun_coins", "must be 6 to 50 (more than the buffer's 5)") }
                f.overrunCoins = coins
            }
            f.resetAt = try Scenario.insertionNumbers(faults, "reset_at")
            f.powerCycleAt = try Scenario.insertionNumbers(faults, "power_cycle_at")
            f.powerOffMilliseconds = try milliseconds(faults, "power_off_ms", 1...60_000) ?? f.powerOffMilliseconds
            s.faults = f
        }
        // After `address`: no hopper may take the acceptor's.
        s.hoppers = try CCTalkHopperScenario.parse(table.tables("hoppers") ?? [], acceptorAddress: s.address)
        return s
    }

    static func text(_ table: SettingsTable, _ key: String) throws(SettingsError) -> String? {
        guard let text = try table.string(key) else { return nil }
        guard !text.isEmpty, text.count <= 64, text.allSatisfy({ $0.isASCII && ($0 == " " || !$0.isWhitespace) }) else {
            throw table.error(key, "must be 1 to 64 printable ASCII characters")
        }
        return text
    }

    static func milliseconds(_ table: SettingsTable, _ key: String, _ range: ClosedRange<Double>) throws(SettingsError) -> Double? {
        guard let value = try table.double(key) else { return nil }
        guard range.contains(value) else { throw table.error(key, "must be \(Int(range.lowerBound)) to \(Int(range.upperBound)) ms") }
        return value
    }
}
