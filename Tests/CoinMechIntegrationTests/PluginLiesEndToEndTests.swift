import CoinMechHarness
import CoinMechClient
import CoinMechProtocol
@testable import CoinMechTestSupport
import Foundation
import Testing

/// A plugin telling plausible lies, in a real daemon against coinsim. Before the host checked
/// accepts against the cabinet's coins, a plugin that accepted every reading as USD "dime" at
/// 100 cents, or as "EUR_2" in a USD cabinet, was credited $1 or €2 a coin, in process and
/// isolated alike.
@Suite("Plugins that lie: returned, flagged and quarantined end to end", .serialized)
struct PluginLiesEndToEndTests {
    @Test("a link that accepts coins this USD cabinet does not take is never credited; it is flagged, and its third lie quarantines it", arguments: [
        ("dime_dollar", "in-process", "'dime' is 10 USD minor units, not 100"),
        ("euro_two", "process", "EUR is not this cabinet's currency (USD)"),
    ])
    func lyingLink(mode: String, isolation: String, problem: String) throws {
        let harness = try DaemonHarness(chain: IsolationEndToEndTests.chain("isolation: \(isolation), config: {mode: \(mode)}"),
                                        source: "{kind: serial, device: mech, baud: 9600, currencies: [USD]}")
        try harness.startSimulator(IsolationEndToEndTests.quarters(12))
        try harness.startDaemon(pluginDirectory: try IsolationEndToEndTests.plugins())
        let client = try IsolationEndToEndTests.connect(harness)
        try TestSupport.waitUntil("the third lie to quarantine the link", timeout: 60) {
            IsolationEndToEndTests.linkProblem(try client.request("status"), "third-party")?["state"] == "quarantined"
        }
        let truth = try harness.simulatorTruth()
        let status = try client.request("status")
        let ctl = try ChildProcess("coinctl", ["status", "--socket", harness.socket])
        #expect(ctl.wait() == 0)
        let shown = String(decoding: ctl.readToEnd(), as: UTF8.self)
        #expect(shown.contains("LIES        third-party accepted 3 coins this cabinet does not take (returned); last: plugin accepted a coin this cabinet does not take: \(problem)"), "\(shown)")
        #expect(try harness.stopDaemon() == 0, "\(harness.daemonLog)")

        // Nothing credited: the liar decided the first three coins, the mech returned the rest.
        #expect(truth.storedValue.isEmpty, "\(truth.outcomes)")
        #expect(try harness.ledger().totals().current.isEmpty)
        let message = "plugin accepted a coin this cabinet does not take: \(problem)"
        let decisions = try harness.decisions()
        let lies = decisions.filter { $0.reason == "plugin_lie" }
        #expect(lies.count == 3)
        #expect(lies.allSatisfy { $0.link == "third-party" && $0.verdict == "reject" && $0.message == message })
        #expect(decisions.allSatisfy { $0.verdict == "reject" })
        // Flagged in status, in the log, and in the ledger (the quarantine, with its cause).
        let flagged = status["plugin_lies"]?.array?.first
        #expect(flagged?["link"] == "third-party" && flagged?["count"] == 3 && flagged?["last"]?.string == message, "\(status)")
        let problemShown = try #require(IsolationEndToEndTests.linkProblem(status, "third-party"))
        #expect(problemShown["cause"] == "lying")
        #expect(status["plugin_inhibit"]?.string?.hasPrefix("link 'third-party' is quarantined: accepted 3 coins this cabinet does not take") == true, "\(status)")
        #expect(harness.daemonLog.contains("a plugin lied: it accepted a coin this cabinet does not take; the coin is returned"))
        let events = try harness.ledger().events(since: 0, limit: 100_000)
        let quarantined = try #require(events.first { $0.kind == "quarantined" }?.detail.flatMap(JSON.parse))
        #expect(quarantined["link"] == "third-party" && quarantined["cause"] == "lying", "\(quarantined)")
        try IsolationEndToEndTests.expectNothingWrongCredited(harness)
    }
}
