import CoinMechCCTalk
import CoinMechConfiguration
import CoinMechDrivers
import CoinMechDaemon
import CoinMechSettings
@testable import CoinMechTestSupport
import Testing

@Suite("The cctalk source's configuration")
struct CCTalkConfigurationTests {
    func parse(_ source: String) throws(SettingsError) -> DaemonConfiguration {
        let table = try SettingsTable.parse("source: \(source)\nstate_dir: /tmp/s\nchain: [{plugin: coin-id}]\n", file: "c.yaml")
        return try DaemonConfiguration.parse(table, pluginDirectory: TestSupport.binDirectory)
    }

    @Test("defaults: address 2, the 8-bit checksum, echo learnt, 9600 baud, a poll every 200 ms")
    func defaults() throws {
        let configuration = try parse("{kind: cctalk, device: /dev/ttyUSB0}")
        guard let cctalk = configuration.source.mech as? CCTalkDriver.Settings else { Issue.record("not a cctalk source"); return }
        #expect(cctalk.device == "/dev/ttyUSB0")
        #expect(cctalk.address == 2 && cctalk.checksum == .simple && cctalk.echo == .auto && cctalk.baud == 9600)
        #expect(cctalk.hostConfiguration.pollInterval == 200_000_000)
        #expect(configuration.source.name == "cctalk" && configuration.source.answerDeadline == nil)
    }

    @Test("every key read")
    func keys() throws {
        let configuration = try parse("{kind: cctalk, device: /dev/ttyS1, address: 3, checksum: crc16, echo: off, poll_interval_ms: 100, positions: [1, 2, 6]}")
        guard let cctalk = configuration.source.mech as? CCTalkDriver.Settings else { Issue.record("not a cctalk source"); return }
        #expect(cctalk.address == 3 && cctalk.checksum == .crc16 && cctalk.echo == .off)
        #expect(cctalk.positions == CoinPositionMask(positions: [1, 2, 6]))
        #expect(cctalk.hostConfiguration.pollInterval == 100_000_000)
    }

    @Test("hoppers: units in order, the value from the coin id unless given, the cabinet's currency")
    func hoppers() throws {
        let configuration = try parse("{kind: cctalk, device: x, currencies: [EUR], hoppers: [{address: 3, coin: EU200A}, {address: 5, coin: EU010A, value_minor: 10, dispense: serial}]}")
        guard let cctalk = configuration.source.mech as? CCTalkDriver.Settings else { Issue.record("not a cctalk source"); return }
        #expect(cctalk.hoppers == [CCTalkHopperUnit(address: 3, coinID: "EU200A", valueMinor: 200), CCTalkHopperUnit(address: 5, coinID: "EU010A", valueMinor: 10, serialDispense: true)])
        #expect(cctalk.hopperCurrency == "EUR")
    }

    @Test("bad values are named with what to write instead", arguments: [
        ("{kind: cctalk}", "key 'source.device': is required for kind cctalk"),
        ("{kind: cctalk, device: x, address: 1}", "key 'source.address': must be 2 to 255"),
        ("{kind: cctalk, device: x, checksum: crc8}", "key 'source.checksum': must be simple8 (most acceptors) or crc16, got 'crc8'"),
        ("{kind: cctalk, device: x, echo: maybe}", "key 'source.echo': must be auto"),
        ("{kind: cctalk, device: x, poll_interval_ms: 1000}", "key 'source.poll_interval_ms': must be between 20 and 500"),
        ("{kind: cctalk, device: x, deadline_ms: 50}", "key 'source.deadline_ms': does not apply"),
        ("{kind: cctalk, device: x, positions: [0, 17]}", "key 'source.positions': must list coin positions from 1 to 16"),
        ("{kind: serial, device: x, address: 2}", "key 'source.address': applies to cctalk sources only"),
        ("{kind: cctalk, device: x, hoppers: [{coin: EU200A, currency: EUR}]}", "key 'source.hoppers[0].address': is required"),
        ("{kind: cctalk, device: x, hoppers: [{address: 2, coin: EU200A, currency: EUR}]}", "not the acceptor's (2)"),
        ("{kind: cctalk, device: x, hoppers: [{address: 3, coin: EU200A, currency: EUR}, {address: 3, coin: EU100A, currency: EUR}]}", "or another hopper's"),
        ("{kind: cctalk, device: x, hoppers: [{address: 3, coin: EU2, currency: EUR}]}", "six-character coin id"),
        ("{kind: cctalk, device: x, hoppers: [{address: 3, coin: EU200A, value_minor: 0, currency: EUR}]}", "must be at least 1"),
        ("{kind: cctalk, device: x, hoppers: [{address: 3, coin: EU200A}]}", "is required (or source.currencies)"),
        ("{kind: cctalk, device: x, currencies: [EUR], hoppers: [{address: 3, coin: GB100A, currency: GBP}]}", "which source.currencies (EUR) does not take"),
        ("{kind: cctalk, device: x, hoppers: [{address: 3, coin: EU200A, currency: EUR}, {address: 4, coin: GB100A, currency: GBP}]}", "another hopper pays EUR"),
        ("{kind: cctalk, device: x, hoppers: [{address: 3, coin: EU200A, currency: EUR, dispense: encrypted}]}", "the encrypted variants need the maker's cipher key"),
        ("{kind: cctalk, device: x, checksum: crc16, hoppers: [{address: 3, coin: EU200A, currency: EUR}]}", "need the 8-bit checksum (simple8)"),
    ])
    func errors(source: String, message: String) {
        #expect {
            _ = try parse(source)
        } throws: { error in
            "\(error)".contains(message)
        }
    }
}
