import CoinMechHarness
import CoinMechClient
import CoinMechLedger
import CoinMechModel
@testable import CoinMechTestSupport
import CoinSimCore
import Foundation
import Testing

@Suite("GPIO pulse mech end to end: coinsim edges → gpio-replay → coinmechd", .serialized)
struct GPIOEndToEndTests {
    @Test("a replayed pulse-mech stream (bouncing contacts) produces the right totals, each coin once", arguments: [false, true])
    func pulseMech(bounce: Bool) throws {
        let dir = TestSupport.temporaryDirectory("gpio")
        let generator = try ChildProcess("coinsim", [
            "edges", "--scenario", "default", "--coins", "25", "--out", "\(dir)/edges.txt", "--truth", "\(dir)/truth.json",
        ] + (bounce ? ["--bounce"] : []))
        #expect(generator.wait() == 0, "\(generator.stderr)")
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        let truth = try decoder.decode(PulseTrains.Truth.self, from: Data(contentsOf: URL(fileURLWithPath: "\(dir)/truth.json")))
        #expect(truth.trains > 10)

        let channels = truth.channels.map { "\"\($0.value)\": {code: \($0.key), value: \(["cent": 1, "nickel": 5, "dime": 10, "quarter": 25][$0.key]!)}" }
            .joined(separator: ", ")
        let harness = try DaemonHarness(
            chain: "chain:\n  - name: coins\n    plugin: channel-map\n    config: {currency: USD, channels: {\(channels)}}\n",
            extra: "")
        // Replace the serial source with the replayed GPIO one.
        var config = try String(contentsOfFile: harness.config, encoding: .utf8)
        config = config.replacingOccurrences(
            of: "source: {kind: serial, device: mech, baud: 9600}",
            with: "source: {kind: gpio-replay, file: \(dir)/edges.txt, speed: 4, pulse: {line: 4, active_low: true, gap_ms: 150, highest_channel: 4}}")
        try config.write(toFile: harness.config, atomically: true, encoding: .utf8)
        try harness.startDaemon()
        let client = try CoinMechConnection(path: harness.socketWhenUp())
        // Every train decided, and (a pulse means "stored") credited at once.
        try TestSupport.waitUntil("\(truth.trains) coins credited", timeout: 40) {
            (try client.request("status")["counters"]?["credited"]?.int ?? 0) >= Int64(truth.trains)
        }
        #expect(try harness.stopDaemon() == 0, "\(harness.daemonLog)")
        let decisions = try harness.decisions()
        #expect(decisions.count == truth.trains)
        #expect(decisions.allSatisfy { $0.verdict == "accept" && $0.state == "credited" })
        #expect(Totals.value(of: try harness.ledger().totals().current) == truth.creditedValue)
        #expect(try harness.creditedValue() == truth.creditedValue)
        #expect(decisions.map(\.channel) == truth.coins.compactMap { $0.channel.map(Int64.init) })
    }
}

@Suite("GPIO light-gate mech end to end", .serialized)
struct LightGateEndToEndTests {
    @Test("every item through the gates is measured and decided once; coins by diameter alone")
    func lightGates() throws {
        let dir = TestSupport.temporaryDirectory("gates")
        let generator = try ChildProcess("coinsim", [
            "edges", "--gates", "--scenario", "default", "--coins", "25", "--out", "\(dir)/edges.txt", "--truth", "\(dir)/truth.json",
        ])
        #expect(generator.wait() == 0, "\(generator.stderr)")
        let items = try JSONDecoder().decode([GateStream.Item].self, from: Data(contentsOf: URL(fileURLWithPath: "\(dir)/truth.json")))
        let harness = try DaemonHarness(chain: """
            chain:
              - plugin: sanity
              - name: usd
                plugin: coin-table
                config: {currency: USD, tolerance: 0.02, require_weight: false}
            """)
        var config = try String(contentsOfFile: harness.config, encoding: .utf8)
        config = config.replacingOccurrences(
            of: "source: {kind: serial, device: mech, baud: 9600}",
            with: "source: {kind: gpio-replay, file: \(dir)/edges.txt, speed: 2, gates: {a: 10, b: 11, distance_mm: 50}}")
        try config.write(toFile: harness.config, atomically: true, encoding: .utf8)
        try harness.startDaemon()
        let client = try CoinMechConnection(path: harness.socketWhenUp())
        try TestSupport.waitUntil("\(items.count) items decided", timeout: 40) {
            (try client.request("status")["counters"]?["readings"]?.int ?? 0) >= Int64(items.count)
        }
        #expect(try harness.stopDaemon() == 0, "\(harness.daemonLog)")
        let decisions = try harness.decisions()
        #expect(decisions.count == items.count)
        for (decision, item) in zip(decisions, items) {
            #expect(abs(decision.diameterMM! - item.diameterMM) < 0.01, "gate timing gives the diameter")
            #expect(decision.weightG == nil)
        }
        // Genuine US coins are accepted as themselves by diameter (their windows do not overlap at ±2 %).
        for (decision, item) in zip(decisions, items) where item.kind.hasPrefix("USD:") {
            #expect(decision.denomination == String(item.kind.dropFirst(4)), "\(item)")
        }
    }
}
