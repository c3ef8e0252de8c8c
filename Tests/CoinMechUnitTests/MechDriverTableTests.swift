import CoinMechConfiguration
import CoinMechDrivers
import CoinMechModel
import CoinMechSettings
@testable import CoinMechTestSupport
import Testing

/// The driver table: every kind of mech is one row, and the configuration reaches a mech only
/// through it. The expected capabilities and credit rules are the protocols' (docs/PROTOCOL.md,
/// docs/HARDWARE.md), not read back from the drivers.
@Suite("The driver table: one row per mech kind, the configuration's only way to a mech")
struct MechDriverTableTests {
    func source(_ yaml: String) throws(SettingsError) -> SourceConfiguration {
        let table = try SettingsTable.parse("source: \(yaml)\nstate_dir: /tmp/s\nchain: [{plugin: sanity}]\n", file: "c.yaml")
        return try DaemonConfiguration.parse(table, pluginDirectory: TestSupport.binDirectory).source
    }

    @Test("the rows: five kinds, each named once, each with a simulator that plays it")
    func rows() {
        #expect(MechDrivers.kinds == ["serial", "gpio", "gpio-replay", "cctalk", "mdb"])
        #expect(Set(MechDrivers.kinds).count == MechDrivers.table.count)
        for driver in MechDrivers.table { #expect(driver.simulator.contains("coinsim"), "\(driver.kind)") }
    }

    @Test("each kind as configured: its driver, its credit rule, what it can do, whether it can be taught", arguments: [
        // A serial mech confirms each coin: credit waits for its word; it measures, so it can be taught.
        ("{kind: serial, device: /dev/ttyS0}", "serial", CreditRule.onConfirmation, MechCapabilities([.measures, .confirms, .teachable]), true),
        ("{kind: serial, device: /dev/ttyS0, confirmations: false}", "serial", .atOnce, [.measures, .teachable], true),
        // A pulse train is the mech's own report of a coin it took: a channel, credited at once.
        ("{kind: gpio, chip: gpiochip0, pulse: {line: 4}}", "gpio", .atOnce, [.classifiesItself], false),
        // Light gates measure a diameter; only with a scale is there a weight to teach.
        ("{kind: gpio, chip: gpiochip0, gates: {a: 1, b: 2, distance_mm: 10}}", "gpio", .atOnce, [.measures], false),
        ("{kind: gpio, chip: gpiochip0, gates: {a: 1, b: 2, distance_mm: 10}, scale: {data: 5, clock: 6, counts_per_gram: 400}}", "gpio", .atOnce,
         [.measures, .teachable], true),
        ("{kind: gpio-replay, file: /tmp/edges.json, pulse: {line: 4}}", "gpio-replay", .atOnce, [.classifiesItself], false),
        // A ccTalk acceptor took the coin before it said so: credited at once, classified by itself.
        ("{kind: cctalk, device: /dev/ttyUSB0}", "cctalk", .atOnce, [.classifiesItself], false),
        // An MDB changer kept the coin before its POLL reply said so: the same.
        ("{kind: mdb, device: /dev/ttyACM0}", "mdb", .atOnce, [.classifiesItself], false),
    ] as [(String, String, CreditRule, MechCapabilities, Bool)])
    func kinds(yaml: String, kind: String, credit: CreditRule, capabilities: MechCapabilities, teachable: Bool) throws {
        let source = try source(yaml)
        #expect(source.kind == kind)
        #expect(source.mech.credit == credit)
        #expect(source.mech.capabilities == capabilities)
        #expect((source.mech.unteachable == nil) == teachable)
        #expect(MechDrivers.driver(kind: kind)?.capabilities.isSuperset(of: capabilities) == true, "a configured mech can do no more than its kind")
    }

    @Test("a kind no row names is refused with the table's kinds; a key only other kinds read is refused, naming them")
    func refusals() {
        do {
            _ = try source("{kind: vending, device: /dev/ttyACM0}")
            Issue.record("an unknown kind was taken")
        } catch {
            #expect(error.description.contains("unknown source kind 'vending' (known: serial, gpio, gpio-replay, cctalk, mdb)"), "\(error)")
        }
        do {
            _ = try source("{kind: gpio, chip: gpiochip0, pulse: {line: 4}, positions: [1]}")
            Issue.record("a ccTalk key on a gpio source was taken")
        } catch {
            #expect(error.description.contains("key 'source.positions': applies to cctalk sources only"), "\(error)")
        }
        do {
            _ = try source("{kind: serial, device: /dev/ttyS0, poll_interval_ms: 100}")
            Issue.record("a polling key on a serial source was taken")
        } catch {
            #expect(error.description.contains("key 'source.poll_interval_ms': applies to cctalk and mdb sources only"), "\(error)")
        }
        #expect(throws: SettingsError.self) { try source("{kind: mdb, device: /dev/ttyACM0, positions: [1]}") }
        do {
            _ = try source("{kind: mdb, device: /dev/ttyACM0, deadline_ms: 50}")
            Issue.record("a deadline on an MDB source was taken")
        } catch {
            #expect(error.description.contains("does not apply: an MDB changer keeps the coin before it reports it"), "\(error)")
        }
        #expect(throws: SettingsError.self) { try source("{kind: mdb, device: /dev/ttyACM0, poll_interval_ms: 5}") }
        #expect(throws: SettingsError.self) { try source("{kind: mdb}") }
    }

    @Test("two sources compare by their mech's settings, across kinds")
    func equality() throws {
        #expect(try source("{kind: serial, device: /dev/ttyS0}") == source("{kind: serial, device: /dev/ttyS0}"))
        #expect(try source("{kind: serial, device: /dev/ttyS0}") != source("{kind: serial, device: /dev/ttyS1}"))
        #expect(try source("{kind: serial, device: /dev/ttyUSB0, name: m}") != source("{kind: cctalk, device: /dev/ttyUSB0, name: m}"))
    }
}
