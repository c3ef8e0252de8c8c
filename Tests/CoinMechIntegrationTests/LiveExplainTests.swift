import CoinMechClient
import CoinMechProtocol
import Foundation
import Testing

/// `coinctl explain` against a running daemon: the running chain's own view of a reading,
/// coin-table's drift included, and nothing decided, recorded or learnt.
@Suite("Explaining a reading to the running daemon", .serialized)
struct LiveExplainTests {
    /// "weight +2.6 %" in coin-table's drift line → 0.026.
    static func drift(_ axis: String, in text: String) -> Double? {
        guard let line = text.split(separator: "\n").first(where: { $0.contains("following the mech's drift from ") }),
              let range = line.range(of: "\(axis) ") else { return nil }
        let number = line[range.upperBound...].prefix { "+-.0123456789".contains($0) }
        return Double(number).map { $0 / 100 }
    }

    @Test("on a mech whose load cell reads 3 % heavy, the running coin-table shows the drift it learnt; asking twice decides, records and teaches nothing")
    func explainsTheRunningChain() throws {
        let harness = try DaemonHarness()
        try harness.startSimulator("""
            seed: 24
            coins: 80
            rate_per_s: 40
            baud: 115200
            mix: {cent: 1, nickel: 1, dime: 1, quarter: 1}
            noise: {diameter: 0.003, weight: 0.01, thickness: 0.02}
            mech:
              bias: {weight: 0.03}
            """)
        try harness.startDaemon()
        let truth = try harness.simulatorTruth()
        #expect(truth.coins.count == 80)
        let decided = try harness.decisions().count

        let (status, first, stderr) = try TeachEndToEndTests.coinctl(harness, ["explain", "24.26,5.67,1.75"])
        #expect(status == 0, "\(stderr)")
        #expect(first.hasPrefix("reading: diameter 24.26 mm, weight 5.67 g, thickness 1.75 mm (chain generation 1; nothing decided or recorded)"), "\(first)")
        #expect(first.contains("3 usd (coin-table 2.2.0): "), "\(first)")
        // The truth is the scenario's bias (+3 % on weight); a few dozen coins learn most of it.
        let weight = try #require(Self.drift("weight", in: first), "\(first)")
        #expect(weight > 0.015 && weight < 0.035, "\(first)")
        #expect(abs(try #require(Self.drift("diameter", in: first))) < 0.003, "\(first)")
        // Explaining again: the same drift, from the same number of coins; no decision recorded.
        let (_, second, _) = try TeachEndToEndTests.coinctl(harness, ["explain", "24.26,5.67,1.75"])
        let coins = { (text: String) in text.split(separator: "\n").first { $0.contains("following the mech's drift from ") }.map(String.init) }
        #expect(coins(first) != nil && coins(first) == coins(second), "\(first)\n\(second)")
        #expect(try harness.decisions().count == decided)

        // Bad figures: refused by coinctl, and by the daemon from a raw client.
        let (bad, _, badError) = try TeachEndToEndTests.coinctl(harness, ["explain", "24.26,heavy"])
        #expect(bad != 0 && badError.contains("is not DIAMETER,WEIGHT[,THICKNESS]"), "\(badError)")
        let client = try CoinMechConnection(path: harness.socket)
        for (fields, message) in [([String: JSON](), "\"diameter\" must be a number of millimetres"),
                                  (["diameter": .double(-1)], "\"diameter\" must be a positive number below 1000"),
                                  (["diameter": .double(24), "weight": .string("x")], "\"weight\" must be a positive number below 1000")] {
            #expect(TeachEndToEndTests.refusal(client, "explain", fields) == "bad_request: \(message)")
        }
        #expect(try harness.stopDaemon() == 0, "\(harness.daemonLog)")
    }
}
