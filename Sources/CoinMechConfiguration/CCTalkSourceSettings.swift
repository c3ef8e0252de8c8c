import CoinMechCCTalk
import CoinMechSettings

extension SourceConfiguration.Kind {
    /// The serial device of a ccTalk source (its hotplug match).
    var cctalkDevice: String? {
        if case .cctalk(let cctalk) = self { return cctalk.device }
        return nil
    }
}

extension SourceConfiguration.CCTalk {
    /// The keys only a ccTalk source reads, and those it refuses.
    static let onlyKeys = ["address", "checksum", "echo", "poll_interval_ms", "positions"]
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
    static func parse(_ table: SettingsTable, resolve: (String) -> String) throws(SettingsError) -> Self {
        for (key, why) in notForCCTalk where table.contains(key) { throw table.error(key, why) }
        guard let device = try table.string("device"), !device.isEmpty else {
            throw table.error("device", "is required for kind cctalk (the acceptor's serial port, e.g. /dev/ttyUSB0)")
        }
        var cctalk = SourceConfiguration.CCTalk(device: resolve(device))
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
        return cctalk
    }
}
