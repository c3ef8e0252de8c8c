import CoinMechChain
import CoinMechCore
import CoinMechHotplug
import CoinMechModel
import CoinMechSerial
import CoinMechSettings
import Foundation

extension SourceConfiguration {
    /// The `source` table's keys, every kind's.
    static let keys = [
        "kind", "device", "baud", "name", "file", "chip", "speed", "pulse", "gates", "scale", "accept_gate", "inhibit", "usb",
        "deadline_ms", "commit_allowance_ms", "confirmations", "confirm_window_ms", "address", "checksum", "echo", "poll_interval_ms", "positions",
        "currencies", "tokens",
    ]

    /// Reads the `source` table of `table`: its kind's own section, the cabinet's coins and the
    /// answer deadline.
    static func parse(_ table: SettingsTable, resolve: (String) -> String) throws(SettingsError) -> SourceConfiguration {
        guard let sourceTable = try table.table("source") else { throw table.error("missing table 'source' (kind, device, baud)") }
        try sourceTable.rejectUnknownKeys(Set(keys))
        let kindName = try sourceTable.string("kind") ?? "serial"
        let name = try sourceTable.string("name") ?? kindName
        guard !name.isEmpty, name.utf8.count <= SourceName.capacity else {
            throw sourceTable.error("name", "must be 1 to \(SourceName.capacity) bytes, got \(name.utf8.count)")
        }
        let kind: Kind
        var hotplug: DeviceMatch?
        if kindName != "cctalk" {
            for key in CCTalk.onlyKeys where sourceTable.contains(key) { throw sourceTable.error(key, "applies to cctalk sources only") }
        }
        switch kindName {
        case "serial":
            let (serial, match) = try Serial.parse(sourceTable, resolve: resolve)
            kind = .serial(serial)
            hotplug = match
        case "cctalk":
            kind = .cctalk(try CCTalk.parse(sourceTable, resolve: resolve))
            if let device = kind.cctalkDevice { hotplug = .serialPath(device) }
        case "gpio", "gpio-replay":
            (kind, hotplug) = try Self.gpio(sourceTable, kindName: kindName, resolve: resolve)
        default:
            throw sourceTable.error("kind", "unknown source kind '\(kindName)' (known: serial, gpio, gpio-replay, cctalk)")
        }
        var source = SourceConfiguration(name: name, kind: kind, hotplug: hotplug)
        (source.coins, source.currenciesConfigured) = try CabinetCoinsSettings.parse(sourceTable)
        // The serial protocol's mech returns a coin it hears nothing about within 50 ms; GPIO
        // mechs have no such protocol, so only a configured deadline applies to them.
        if let deadline = try sourceTable.double("deadline_ms") ?? (kindName == "serial" ? 50 : nil) {
            guard (5...60_000).contains(deadline) else { throw sourceTable.error("deadline_ms", "must be between 5 and 60000") }
            let allowance = try sourceTable.double("commit_allowance_ms") ?? min(10, deadline / 2)
            guard allowance >= 0, allowance < deadline else {
                throw sourceTable.error("commit_allowance_ms", "must be at least 0 and below deadline_ms (\(deadline))")
            }
            if case .serial(let serial) = kind {
                // An answer's bytes take time on the line, and the deadline covers them too.
                // (An answer with a six-digit device sequence number: 18 bytes.)
                let transit = LineTiming(baud: serial.baud, answerFraming: SerialFrame.decisionFraming).answerTransit(deviceSeq: 123_456).milliseconds
                guard allowance + transit < deadline else {
                    throw sourceTable.error("deadline_ms", "at \(serial.baud) baud an answer takes \(String(format: "%.0f", transit)) ms on the line, which with commit_allowance_ms \(String(format: "%g", allowance)) leaves no time to decide within \(String(format: "%g", deadline)) ms; set deadline_ms to how long your mech waits")
                }
            }
            source.answerDeadline = AnswerDeadline(deadlineMilliseconds: deadline, commitAllowanceMilliseconds: allowance)
        } else if try sourceTable.double("commit_allowance_ms") != nil {
            throw sourceTable.error("commit_allowance_ms", "needs deadline_ms: this source kind has no answer deadline unless one is set")
        }
        return source
    }
}
