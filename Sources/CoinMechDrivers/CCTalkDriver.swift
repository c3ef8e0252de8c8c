import CoinMechCCTalk
import CoinMechHotplug
import CoinMechModel
import CoinMechSettings
import CoinMechSources

/// A ccTalk coin acceptor on a serial line: it classifies and takes each coin itself and
/// reports it in its credit buffer, which the host polls (docs/PROTOCOL.md part three).
public enum CCTalkDriver: MechDriver {
    public static let kind = "cctalk"
    public static let capabilities: MechCapabilities = [.classifiesItself]
    public static let simulator = "coinsim run --protocol cctalk"
    public static let keys = ["device", "address", "checksum", "echo", "baud", "poll_interval_ms", "positions", "hoppers"]

    public struct Settings: MechSettings, Equatable {
        public var device: String
        /// The acceptor's bus address: 2 for a coin acceptor unless it was re-addressed.
        public var address: UInt8 = CCTalkFrame.coinAcceptorAddress
        public var checksum: CCTalkChecksum = .simple
        /// Whether the line gives the host its own bytes back (a single-wire bus does).
        public var echo: CCTalkEchoMode = .auto
        public var baud = 9600
        /// How often the credit buffer (229) is read; the specification's advice is 200 ms.
        public var pollInterval: Duration = .milliseconds(200)
        /// The coin positions the operator allows; the chain narrows them further.
        public var positions: CoinPositionMask = .all
        /// Payout hoppers on the same bus, in unit order, and the currency they pay.
        public var hoppers: [CCTalkHopperUnit] = []
        public var hopperCurrency: String?

        public init(device: String) {
            self.device = device
        }

        public var hotplug: DeviceMatch? { .serialPath(device) }
        public var capabilities: MechCapabilities { [.classifiesItself] }
        /// The acceptor took the coin before it said so: its credit is the ledger's, at once.
        public var credit: CreditRule { .atOnce }
        public var unteachable: String? {
            "a ccTalk acceptor classifies coins itself and reports coin ids, not measurements: teach it with its maker's tool"
        }

        public var acceptor: AcceptorSettings? { AcceptorSettings(address: address, positions: positions) }

        public func make(_ context: MechContext) -> any Mech {
            var host = hostConfiguration
            host.allowed = context.acceptor?.positions ?? .all  // from the first identification on
            host.creditableCoinIDs = context.acceptor?.creditableCoinIDs
            return CCTalkMech(path: device, host: host, persisted: context.acceptor?.persisted.map(CCTalkCounterState.init),
                              remembered: context.acceptor?.remembered.flatMap { CCTalkDriver.identity(recorded: $0, address: address) },
                              hoppers: hoppers, currency: hopperCurrency, failpoints: context.failpoints)
        }

        /// What the protocol engine is driven with.
        public var hostConfiguration: CCTalkHostConfiguration {
            var host = CCTalkHostConfiguration()
            host.address = address
            host.checksum = checksum
            host.echo = echo
            host.baud = baud
            host.pollInterval = UInt64(pollInterval.components.seconds) * 1_000_000_000 + UInt64(pollInterval.components.attoseconds / 1_000_000_000)
            return host
        }
    }

    /// The device an `acceptor_identified` event recorded (its serial number and coin ids);
    /// nil without a serial number, which is what a device is recognised by.
    public static func identity(recorded detail: [String: String], address: UInt8) -> CCTalkDeviceIdentity? {
        guard let serial = detail["serial_number"].flatMap(UInt32.init) else { return nil }
        var identity = CCTalkDeviceIdentity(address: address)
        identity.serialNumber = serial
        identity.manufacturer = detail["manufacturer"]
        identity.productCode = detail["product"]
        for pair in (detail["coins"] ?? "").split(separator: ",") {
            let parts = pair.split(separator: "=", maxSplits: 1)
            guard parts.count == 2, let position = Int(parts[0]), CoinPositionMask.positions.contains(position) else { continue }
            identity.coinIDs[position] = CoinID(String(parts[1]))
        }
        return identity
    }

    static let notForCCTalk = [
        ("file", "is for gpio-replay sources"), ("chip", "is for gpio sources"), ("speed", "is for gpio-replay sources"),
        ("pulse", "is for GPIO mechs"), ("gates", "is for GPIO mechs"), ("scale", "is for GPIO mechs"),
        ("accept_gate", "is for GPIO mechs"), ("inhibit", "is for GPIO mechs: a ccTalk acceptor is inhibited over the line"),
        ("usb", "is for serial sources"),
        ("deadline_ms", "does not apply: a ccTalk acceptor takes the coin before it reports it, so there is no answer to be late"),
        ("commit_allowance_ms", "does not apply: a ccTalk acceptor has no answer deadline"),
        ("confirmations", "does not apply: a ccTalk acceptor's credit event is its confirmation"),
        ("confirm_window_ms", "does not apply: a ccTalk acceptor's credit event is its confirmation"),
    ]

    /// Reads a `kind: cctalk` source table: device, address (default 2), checksum (`simple8` or
    /// `crc16`), echo (`auto`, `on`, `off`), baud (9600), poll_interval_ms (200), positions (all).
    public static func parse(_ table: SettingsTable, resolve: (String) -> String) throws(SettingsError) -> Settings {
        for (key, why) in notForCCTalk where table.contains(key) { throw table.error(key, why) }
        guard let device = try table.string("device"), !device.isEmpty else {
            throw table.error("device", "is required for kind cctalk (the acceptor's serial port, e.g. /dev/ttyUSB0)")
        }
        var cctalk = Settings(device: resolve(device))
        if let address = try table.int("address") {
            guard (2...255).contains(address) else {
                throw table.error("address", "must be 2 to 255 (0 is broadcast and 1 the host; coin acceptors ship at 2), got \(address)")
            }
            cctalk.address = UInt8(address)
        }
        if let checksum = try table.string("checksum") {
            switch checksum {
            case "simple8": cctalk.checksum = .simple
            case "crc16": cctalk.checksum = .crc16
            default: throw table.error("checksum", "must be simple8 (most acceptors) or crc16, got '\(checksum)'")
            }
        }
        if let echo = try table.string("echo") {
            guard let mode = CCTalkEchoMode(rawValue: echo) else {
                throw table.error("echo", "must be auto (learn it), on (single-wire bus) or off (separate lines), got '\(echo)'")
            }
            cctalk.echo = mode
        }
        if let baud = try table.int("baud") {
            guard [4800, 9600, 19200, 38400, 57600, 115200].contains(baud) else {
                throw table.error("baud", "must be one of 4800, 9600 (the ccTalk standard), 19200, 38400, 57600, 115200, got \(baud)")
            }
            cctalk.baud = baud
        }
        if let interval = try table.double("poll_interval_ms") {
            // An acceptor not polled for about a second inhibits itself.
            guard (20...500).contains(interval) else {
                throw table.error("poll_interval_ms", "must be between 20 and 500 (an acceptor not polled for about 1 s inhibits itself; 200 is the specification's advice), got \(interval)")
            }
            cctalk.pollInterval = .nanoseconds(Int64(interval * 1e6))
        }
        if let positions = try table.doubles("positions") {
            let whole = positions.compactMap { $0 == $0.rounded() ? Int(exactly: $0) : nil }
            guard whole.count == positions.count, whole.allSatisfy(CoinPositionMask.positions.contains), !whole.isEmpty else {
                throw table.error("positions", "must list coin positions from 1 to 16 (the acceptor's coin id table), e.g. [1, 2, 3]")
            }
            cctalk.positions = CoinPositionMask(positions: whole)
        }
        if let hoppers = try table.tables("hoppers") {
            // A CRC-16 frame carries no source address: a late reply of the acceptor could be
            // taken for a hopper's, and a hopper's account is what money out is settled from.
            guard cctalk.checksum == .simple else {
                throw table.error("hoppers", "need the 8-bit checksum (simple8): a CRC-16 frame names no sender, so a reply could not be told from the acceptor's")
            }
            let cabinet = try table.strings("currencies")
            let fallback = cabinet?.first
            for hopper in hoppers {
                let unit = try parseHopper(hopper, acceptor: cctalk.address, taken: Set(cctalk.hoppers.map(\.address)))
                let currency = try hopper.string("currency") ?? fallback
                guard let currency, currency.count == 3, currency.allSatisfy({ $0.isASCII && $0.isUppercase }) else {
                    throw hopper.error("currency", "is required (or source.currencies): the ISO 4217 code of the coin it pays, e.g. EUR")
                }
                if let cabinet, !cabinet.contains(currency) {
                    throw hopper.error("currency", "is \(currency), which source.currencies (\(cabinet.joined(separator: ", "))) does not take: change is paid in the cabinet's money")
                }
                if let paid = cctalk.hopperCurrency, paid != currency {
                    throw hopper.error("currency", "is \(currency), but another hopper pays \(paid): one payout is paid in one currency")
                }
                cctalk.hopperCurrency = currency
                cctalk.hoppers.append(unit)
            }
        }
        return cctalk
    }

    /// One `hoppers` entry: address (required, not the host's or the acceptor's), coin (its
    /// six-character coin id), value_minor (default: the coin id's value), currency, and
    /// dispense (`plain`, or `serial` for a hopper that wants its serial number with the count).
    static func parseHopper(_ table: SettingsTable, acceptor: UInt8, taken: Set<UInt8>) throws(SettingsError) -> CCTalkHopperUnit {
        try table.rejectUnknownKeys(["address", "coin", "value_minor", "currency", "dispense"])
        guard let address = try table.int("address") else {
            throw table.error("address", "is required: the hopper's bus address (hoppers ship at 3 to 10)")
        }
        guard (2...255).contains(address), UInt8(address) != acceptor, !taken.contains(UInt8(address)) else {
            throw table.error("address", "must be 2 to 255 and not the acceptor's (\(acceptor)) or another hopper's, got \(address)")
        }
        guard let coin = try table.string("coin"), coin.count == 6, coin.allSatisfy({ $0.isASCII && !$0.isWhitespace }) else {
            throw table.error("coin", "is required: the six-character coin id of the coin it pays, e.g. EU200A")
        }
        if let given = try table.int("value_minor"), given <= 0 {
            throw table.error("value_minor", "must be at least 1: what one coin is worth in minor units, got \(given)")
        }
        let value = try table.int("value_minor").map(Int64.init) ?? CoinID(coin).nominalValue
        guard let value, value > 0 else {
            throw table.error("value_minor", "is required when the coin id does not say its value: what one coin is worth in minor units")
        }
        var serial = false
        if let variant = try table.string("dispense") {
            switch variant {
            case "plain": serial = false
            case "serial": serial = true
            default: throw table.error("dispense", "must be plain or serial (the encrypted variants need the maker's cipher key and are not supported), got '\(variant)'")
            }
        }
        return CCTalkHopperUnit(address: UInt8(address), coinID: coin, valueMinor: value, serialDispense: serial)
    }
}
