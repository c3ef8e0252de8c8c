import CoinMechLedger
import CoinSimCore
import Foundation
import Testing

/// Real processes: coinsim playing close euro coins on a biased, noisy mech; coinmechd deciding
/// with the real coin-table plugin; the ledger compared with the simulator's ground truth.
@Suite("coin-table end to end: close coins are returned as ambiguous, never credited as each other", .serialized)
struct AmbiguousEndToEndTests {
    @Test("50c and €1 on a noisy mech: ambiguous returns name both, every credited coin is what was inserted")
    func closeCoins() throws {
        // A coarse diameter sensor (1 %): 50c and €1 are 4σ apart, so some readings fall between.
        let harness = try DaemonHarness(chain: """
            chain:
              - plugin: sanity
              - name: eur
                plugin: coin-table
                config: {currency: EUR, sensor_noise: {diameter: 0.01, weight: 0.02, thickness: 0.02}}
            """)
        try harness.startSimulator("""
            seed: 16
            coins: 120
            rate_per_s: 20
            currency: EUR
            mix: {EUR_50c: 1, EUR_1: 1}
            noise: {diameter: 0.01, weight: 0.02, thickness: 0.02}
            mech:
              bias: {weight: 0.01}
              mint_spread: true
            """)
        try harness.startDaemon()
        let truth = try harness.simulatorTruth()
        #expect(try harness.stopDaemon() == 0, "\(harness.daemonLog)")
        // Not asserted: that no reading missed the mech's deadline (the speed of the machine
        // running this); a late answer must be settled as returned, which `disagreements` judges.

        let decisions = try harness.decisions()
        #expect(decisions.count == 120)
        let ambiguous = decisions.filter { $0.reason == "ambiguous" }
        #expect(!ambiguous.isEmpty, "no reading fell between the two coins")
        // The nearer of the two is named first.
        let named = Set(["could be EUR_50c or EUR_1: too close to both to tell, returned", "could be EUR_1 or EUR_50c: too close to both to tell, returned"])
        #expect(ambiguous.allSatisfy { $0.link == "eur" && named.contains($0.message ?? "") }, "\(ambiguous.map(\.message))")
        // Ground truth: what was inserted, by device sequence number (no power cycles here).
        let inserted = Dictionary(uniqueKeysWithValues: truth.coins.map { ($0.devseq, $0.kind) })
        for decision in decisions where decision.verdict == "accept" {
            #expect(inserted[UInt64(decision.deviceSeq!)] == "EUR:\(decision.denomination!)", "devseq \(decision.deviceSeq!)")
        }
        #expect(DaemonHarness.disagreements(decisions, truth).isEmpty, "\(DaemonHarness.disagreements(decisions, truth))")
        #expect(decisions.filter { $0.verdict == "accept" }.count > 60)
    }
}
