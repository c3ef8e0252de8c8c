import CoinMechSettings
@testable import CoinMechTestSupport
import CoinSimCore
import Foundation
import Testing

@Suite("Scenario files: every key parsed, bad files named by key and line")
struct ScenarioTests {
    @Test("every shipped scenario parses", arguments: ["default", "eur-mix", "eur-close", "faults", "burst", "soak", "cctalk", "cctalk-hoppers", "changer"])
    func shippedScenariosParse(name: String) throws {
        let path = "\(TestSupport.packageRoot)/Simulators/scenarios/\(name).yaml"
        let scenario = try Scenario.load(path: path)
        #expect(scenario.name == name)
        #expect(!scenario.mix.isEmpty)
        #expect(name != "cctalk-hoppers" || scenario.cctalk.hoppers.count == 3)
    }

    @Test("keys are read into the scenario")
    func keysRead() throws {
        let scenario = try parse("""
            name: t
            seed: 5
            coins: 10
            rate_per_s: 7
            deadline_ms: 40
            thickness: false
            currency: eur
            mix: {EUR_2: 3, EUR_1: 1}
            noise: {diameter: 0.01, weight: {sigma: 0.05, absolute: true}}
            others: {slug: 0.1, washer: 0.2, foreign: 0.3, foreign_currency: GBP}
            bursts: {every_s: 4, coins: 6, rate_per_s: 15}
            faults: {garbage: 0.5, garbage_bytes: 3, bad_checksum: 0.1, truncated: 0.2, overlong: 0.3, duplicate: 0.4,
                     jam_at: [2], power_cycle_at: [3, 4], disconnect_at: [5], disconnect_ms: 250}
            """)
        #expect(scenario.seed == 5 && scenario.coins == 10 && scenario.ratePerSecond == 7 && scenario.deadlineMilliseconds == 40)
        #expect(!scenario.measuresThickness)
        #expect(scenario.currency == "EUR")
        #expect(scenario.mix.map(\.code) == ["EUR_2", "EUR_1"])
        #expect(scenario.diameterNoise == Noise(sigma: 0.01))
        #expect(scenario.weightNoise == Noise(sigma: 0.05, absolute: true))
        #expect(scenario.slugFraction == 0.1 && scenario.washerFraction == 0.2 && scenario.foreignFraction == 0.3)
        #expect(scenario.foreignCurrency == "GBP")
        #expect(scenario.burst == Scenario.Burst(everySeconds: 4, coins: 6, ratePerSecond: 15))
        #expect(scenario.faults.powerCycleAt == [3, 4])
        #expect(scenario.faults.disconnectMilliseconds == 250)
        #expect(scenario.faults.garbageBytes == 3)
    }

    @Test("bad scenario files give errors that name the file, the line and the key", arguments: [
        ("coins: 3\nrate: 4\n", "t.yaml:2: key 'rate': unknown key (known here: alloy, baud, bursts, cctalk, coins, currency, deadline_ms, faults, firmware, mdb, mech, mix, name, noise, others, rate_per_s, seed, thickness)"),
        ("rate_per_s: fast\n", "t.yaml:1: key 'rate_per_s': must be a number, got 'fast'"),
        ("currency: XXX\n", "t.yaml:1: key 'currency': no coin table for 'XXX' (known: USD, EUR, GBP)"),
        ("mix:\n  quarter: 1\n  loonie: 2\n", "t.yaml:3: key 'mix.loonie': not a USD denomination (known: cent, nickel, dime, quarter)"),
        ("faults:\n  garbage: 2\n", "t.yaml:2: key 'faults.garbage': must be a fraction between 0 and 1"),
        ("faults:\n  jam_at: [0]\n", "t.yaml:2: key 'faults.jam_at': must list insertion numbers (1 = the first coin, at most 10^12)"),
        ("noise:\n  weight: {sigma: 0.1, absolut: true}\n", "t.yaml:2: key 'noise.weight.absolut': unknown key (known here: absolute, sigma)"),
        ("coins: [1, 2\n", "t.yaml:2: not valid YAML: did not find expected ',' or ']'"),
        ("- 1\n- 2\n", "t.yaml:1: must be a table"),
        ("mdb:\n  faults:\n    status_at: {\"3\": 99}\n", "t.yaml:3: key 'mdb.faults.status_at.3': must be an MDB changer status code, 1 to 13 (13: possible credited coin removal)"),
        ("mdb:\n  faults:\n    lost_replies: 0.1\n", "t.yaml:3: key 'mdb.faults.lost_replies': unknown key (known here: lost_poll_reply_at, lost_reply, payout_jam_after, reset_during_payout_after, status_at, tube_lag)"),
        ("mdb:\n  pay_interval_ms: 5\n", "t.yaml:2: key 'mdb.pay_interval_ms': must be 10 to 5000, got 5"),
    ])
    func badFiles(text: String, message: String) {
        do {
            _ = try parse(text)
            Issue.record("should have failed: \(message)")
        } catch {
            #expect(error.description == message)
        }
    }

    // Found by fuzzing (make fuzz, targets config and scenario): libyaml puts the end of a file
    // that lacks its final line break on a line of its own, past the file's last line.
    @Test("a YAML error at the end of a file names a line the file has", arguments: [
        ("coins: [1, 2", "t.yaml:1: not valid YAML: did not find expected ',' or ']'"),
        ("seed: 1\ncoins: {c", "t.yaml:2: not valid YAML: did not find expected ',' or '}'"),
        ("seed: 1\r\ncoins: [1\r\n", "t.yaml:3: not valid YAML: did not find expected ',' or ']'"),
        ("seed: 1\rcoins: [1", "t.yaml:2: not valid YAML: did not find expected ',' or ']'"),
        // An empty key there: libyaml marks it on the line after the last.
        ("seed: 1\n?", "t.yaml:2: unknown key (known here: alloy, baud, bursts, cctalk, coins, currency, deadline_ms, faults, firmware, mdb, mech, mix, name, noise, others, rate_per_s, seed, thickness)"),
    ])
    func errorAtTheEnd(text: String, message: String) {
        #expect(throws: Error.self) { try parse(text) }
        do {
            _ = try parse(text)
        } catch {
            #expect(error.description == message)
        }
    }

    @Test("an unreadable scenario file says so")
    func unreadable() {
        #expect(throws: SettingsError(file: "/nonexistent/s.yaml", line: nil, key: "", message: "cannot read file: no such file")) {
            try Scenario.load(path: "/nonexistent/s.yaml")
        }
    }

    @Test("the same seed gives the same insertions; the mix and the others follow their weights")
    func generator() throws {
        let scenario = try parse("seed: 3\nmix: {quarter: 3, dime: 1}\nothers: {slug: 0.1}\n")
        var a = InsertionGenerator(scenario: scenario), b = InsertionGenerator(scenario: scenario)
        var kinds: [String: Int] = [:]
        for _ in 0..<4000 {
            let x = a.next(), y = b.next()
            #expect(x == y)
            kinds[x.kind.description, default: 0] += 1
        }
        #expect(kinds.keys.sorted() == ["USD:dime", "USD:quarter", "slug"])
        #expect((300...500).contains(kinds["slug"]!))
        let ratio = Double(kinds["USD:quarter"]!) / Double(kinds["USD:dime"]!)
        #expect((2.6...3.4).contains(ratio))
    }

    private func parse(_ text: String) throws(SettingsError) -> Scenario {
        try Scenario.parse(SettingsTable.parse(text, file: "t.yaml"))
    }
}
