import CoinMechLedger
import CoinMechModel
@testable import CoinMechTestSupport
import CoinSimCore
import Foundation
import Testing

/// Real processes: coinsim's fraud scenario (its mech measuring the alloy axis from each item's
/// layers and metals) against coinmechd with the real coin-table; its ground truth joined with
/// the ledger.
@Suite("Fraud end to end: no slug, washer, copy, shaved coin or foreign twin credited", .serialized)
struct FraudEndToEndTests {
    @Test("the fraud scenario through coinmechd: frauds returned, genuine coins credited as the truth says, nothing lost, doubled or phantom")
    func fraudScenario() throws {
        let harness = try DaemonHarness(chain: """
            chain:
              - plugin: sanity
              - name: eur
                plugin: coin-table
                config: {currency: EUR, sensor_noise: {diameter: 0.003, weight: 0.02, thickness: 0.02, alloy: 0.02}}
            """)
        let scenario = try String(contentsOfFile: "\(TestSupport.packageRoot)/Simulators/scenarios/fraud.yaml", encoding: .utf8)
            .replacingOccurrences(of: "coins: 0", with: "coins: 240")
            .replacingOccurrences(of: "rate_per_s: 4", with: "rate_per_s: 20")
        try harness.startSimulator(scenario)
        try harness.startDaemon()
        let truth = try harness.simulatorTruth()
        #expect(try harness.stopDaemon() == 0, "\(harness.daemonLog)")
        // Not asserted: that no reading missed the mech's deadline. That is the speed of the
        // machine running this (a loaded one missed one); a missed coin goes back, and the audit
        // below judges it like any other (never credited).

        // Every reading carried the alloy axis onto the ledger, and the mech's announcement is there.
        let events = try harness.ledger().events(since: 0, limit: 1_000_000)
        let decisions = events.filter { $0.kind == "decision" }
        #expect(decisions.count == 240)
        #expect(decisions.allSatisfy { $0.alloy != nil }, "a decision without its alloy axis")
        let statuses = events.filter { $0.kind == "mech_status" }.compactMap { event in
            event.detail.flatMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: String] }
        }
        #expect(statuses.contains { $0["status"] == "alloy" && $0["detail"] == "60000/1000000" }, "\(statuses)")

        // Ground truth: what went in, by device sequence number (no power cycles here).
        let inserted = Dictionary(uniqueKeysWithValues: truth.coins.map { ($0.devseq, $0.kind) })
        let credited = events.filter { $0.kind == "coin" }
        let fraudCredited = credited.filter { !(inserted[UInt64($0.deviceSeq!)] ?? "").hasPrefix("EUR:") }
        #expect(fraudCredited.isEmpty, "credited: \(fraudCredited.map { inserted[UInt64($0.deviceSeq!)] ?? "?" })")
        for coin in credited {
            #expect(inserted[UInt64(coin.deviceSeq!)] == "EUR:\(coin.denomination!)", "devseq \(coin.deviceSeq!)")
        }
        let frauds = truth.coins.filter { !$0.kind.hasPrefix("EUR:") }
        #expect(frauds.count > 100, "the scenario fed \(frauds.count) frauds")
        #expect(Set(frauds.map { $0.kind.split(separator: ":").prefix(2).joined(separator: ":") }).count >= 8, "\(Set(frauds.map(\.kind)))")
        let rejected = decisions.filter { $0.reason == "wrong_alloy" }
        #expect(rejected.count >= 10, "frauds the alloy gave away: \(rejected.count)")
        // Genuine coins: credited as the truth says (the mech stored them), all but a few.
        let genuine = truth.coins.filter { $0.kind.hasPrefix("EUR:") }
        #expect(credited.count >= genuine.count * 9 / 10, "\(credited.count) of \(genuine.count) genuine coins credited")

        let audit = try harness.audit()
        #expect(audit.lost.isEmpty && audit.doubled.isEmpty && audit.phantom.isEmpty && audit.wrongValue.isEmpty,
                "lost \(audit.lost), doubled \(audit.doubled), phantom \(audit.phantom), wrong value \(audit.wrongValue)")
        #expect(audit.credited.count == credited.count)
    }
}
