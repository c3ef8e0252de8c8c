import CoinMechHarness
import CoinMechClient
import CoinMechConfiguration
import CoinMechLedger
import CoinMechModel
@testable import CoinMechTestSupport
import CoinSimCore
import Foundation
import Testing

/// Real processes: coinsim on a real pty, coinmechd with real plugins and a real SQLite ledger.
@Suite("coinmechd end to end against coinsim", .serialized)
struct DaemonEndToEndTests {
    @Test("default scenario: every coin decided, credited exactly when the mech stored it")
    func defaultScenario() throws {
        let harness = try DaemonHarness()
        try harness.startSimulator(try String(contentsOfFile: "\(TestSupport.packageRoot)/Simulators/scenarios/default.yaml", encoding: .utf8),
                                   arguments: ["--coins", "60", "--rate", "15"])
        try harness.startDaemon()
        let truth = try harness.simulatorTruth()
        #expect(try harness.stopDaemon() == 0, "\(harness.daemonLog)")

        let decisions = try harness.decisions()
        #expect(decisions.count == 60)  // every coin decided, none twice
        // Decisions agree with what the mech did: an accept the ledger holds is one the mech heard in time.
        #expect(DaemonHarness.disagreements(decisions, truth).isEmpty, "\(DaemonHarness.disagreements(decisions, truth))")
        let audit = try harness.audit()
        #expect(audit.isClean, "\(audit.problems)")
        #expect(!audit.stored.isEmpty)
        // Only genuine coins were credited, and the totals say the same as the cash box.
        #expect(truth.acceptedValue["(not creditable)"] == nil)
        let totals = try harness.ledger().totals()
        #expect(Totals.value(of: totals.current) == truth.storedValue)
        #expect(Totals.value(of: totals.lifetime) == truth.storedValue)
        #expect(try harness.creditedValue() == truth.storedValue)
        // Slugs, washers and foreign coins were returned, with a reason.
        let rejected = decisions.filter { $0.verdict == "reject" }
        #expect(rejected.allSatisfy { $0.reason != nil && $0.link != nil })
        #expect(harness.daemonLog.contains("<7>coinmechd: decision"))
    }

    @Test("a coin decided too late for the mech's deadline is recorded as returned, never credited")
    func decidedPastDeadline() throws {
        let plugins = TestSupport.temporaryDirectory("slow-plugins")
        _ = try TestSupport.compileFixture("misbehaving", into: plugins)
        try TestSupport.copyBuiltPlugin("coin-table", into: plugins)
        // In process, with a budget that allows its 80 ms: this test is about the mech's deadline, not containment.
        let chain = "chain:\n  - {plugin: misbehaving, config: {mode: slow}, isolation: in-process, budget_ms: 200}\n  - {name: usd, plugin: coin-table, config: {currency: USD}}\n"
        let scenario = "coins: 6\nrate_per_s: 4\nseed: 3\nmix: {quarter: 1}\n"

        // The mech waits 50 ms; every decision takes 80: the mech returns every coin itself.
        let late = try DaemonHarness(chain: chain)
        try late.startSimulator(scenario)
        try late.startDaemon(pluginDirectory: plugins)
        let lateTruth = try late.simulatorTruth()
        let status = try CoinMechConnection(path: late.socket).request("status")
        #expect(try late.stopDaemon() == 0, "\(late.daemonLog)")
        #expect(lateTruth.outcomes.deadlineMisses == 6)
        let decisions = try late.decisions()
        #expect(decisions.count == 6)
        #expect(decisions.allSatisfy { $0.verdict == "reject" && $0.reason == "deadline_passed" && $0.link == "deadline" })
        #expect(decisions.first?.message?.contains("(usd accepted it)") == true)
        #expect(DaemonHarness.disagreements(decisions, lateTruth).isEmpty, "\(DaemonHarness.disagreements(decisions, lateTruth))")
        #expect(try late.ledger().totals().current.isEmpty)
        #expect(status["counters"]?["deadline_passed"]?.int == 6)
        #expect(late.daemonLog.contains("accept withdrawn: too late for the mech's deadline"))
        let lateAudit = try late.audit()
        #expect(lateAudit.isClean, "\(lateAudit.problems)")

        // A mech that waits 500 ms, configured as such: the same slow chain credits every coin.
        let patient = try DaemonHarness(chain: chain, extra: "")
        try String(contentsOfFile: patient.config, encoding: .utf8)
            .replacingOccurrences(of: "baud: 9600}", with: "baud: 9600, deadline_ms: 500}")
            .write(toFile: patient.config, atomically: true, encoding: .utf8)
        try patient.startSimulator(scenario + "deadline_ms: 500\n")
        try patient.startDaemon(pluginDirectory: plugins)
        let patientTruth = try patient.simulatorTruth()
        #expect(try patient.stopDaemon() == 0, "\(patient.daemonLog)")
        let audit = try patient.audit()
        #expect(audit.isClean, "\(audit.problems)")
        #expect(audit.credited.count == patientTruth.outcomes.stored)
        #expect(patientTruth.outcomes.stored == 6)
    }

    @Test("at startup the daemon removes plugin copies no chain of it uses any more")
    func startupPrunesPluginCopies() throws {
        let harness = try DaemonHarness()
        let copies = "\(harness.dir)/cache/plugins"
        try FileManager.default.createDirectory(atPath: copies, withIntermediateDirectories: true)
        let stale = "libsanity-\(String(repeating: "0", count: 64)).so"
        try "an old version".write(toFile: "\(copies)/\(stale)", atomically: false, encoding: .utf8)
        try harness.startDaemon()
        try TestSupport.waitUntil("the daemon's socket", timeout: 20) { FileManager.default.fileExists(atPath: harness.socket) }
        let left = try FileManager.default.contentsOfDirectory(atPath: copies)
        #expect(try harness.stopDaemon() == 0, "\(harness.daemonLog)")
        #expect(!left.contains(stale))
        #expect(Set(left.map { String($0.prefix(while: { $0 != "-" })) }) == ["libsanity", "libweight", "libcoin"])
        #expect(left.count == 3)
    }

    @Test("faults: garbage and broken sentences are counted, duplicates credited once, nothing wrong credited")
    func faults() throws {
        let harness = try DaemonHarness()
        try harness.startSimulator(try String(contentsOfFile: "\(TestSupport.packageRoot)/Simulators/scenarios/faults.yaml", encoding: .utf8))
        try harness.startDaemon()
        let truth = try harness.simulatorTruth()
        #expect(try harness.stopDaemon() == 0, "\(harness.daemonLog)")

        let decisions = try harness.decisions()
        #expect(DaemonHarness.disagreements(decisions, truth).isEmpty, "\(DaemonHarness.disagreements(decisions, truth))")
        let audit = try harness.audit()
        #expect(audit.isClean, "\(audit.problems)")
        #expect(truth.faultsInjected.duplicates > 0)
        #expect(truth.protocolErrors.duplicateDecisions == truth.faultsInjected.duplicates)  // answered again…
        // …recorded once: every coin the mech heard an answer for is decided, and no more than the
        // intact sentences (one the line lost at the disconnect was never read, and the mech returned it).
        let answered = truth.coins.filter { $0.outcome == "accept" || $0.outcome == "return" }.count
        #expect(decisions.count >= answered && decisions.count <= truth.sent.readings - truth.faultsInjected.duplicates)
        #expect(Set(decisions.map { "\($0.epoch!)/\($0.deviceSeq!)" }).count == decisions.count)
        let totals = try harness.ledger().totals()
        #expect(Totals.value(of: totals.current) == truth.storedValue)

        let events = try harness.ledger().events(since: 0, limit: 100_000)
        let shutdown = try #require(events.last { $0.kind == "shutdown" }?.detail)
        let counts = try #require(try JSONSerialization.jsonObject(with: Data(shutdown.utf8)) as? [String: String])
        #expect(counts["garbage_bytes"] == "\(truth.faultsInjected.garbageBytes)")
        #expect(counts["bad_checksums"] == "\(truth.faultsInjected.badChecksums)")
        #expect(counts["overlong"] == "\(truth.faultsInjected.overlong)")
        #expect(counts["truncated"] == "\(truth.faultsInjected.truncated)")
        #expect(counts["duplicates"] == "\(truth.faultsInjected.duplicates)")
        // The power cycle and the disconnect are on record (the mech's first announcement is of the
        // session its hello already named, and starts no epoch).
        #expect(events.filter { $0.kind == "mech_power_up" }.count == 1)
        #expect(Set(decisions.compactMap(\.epoch)).count == 2)
        #expect(events.filter { $0.kind == "source_lost" }.count >= 2)  // the disconnect, and the end
        #expect(events.filter { $0.kind == "mech_status" }.count == 1)
    }

    @Test("a disconnect and reconnect mid-run loses no coin: the mech is asked about coins stored meanwhile")
    func disconnect() throws {
        let harness = try DaemonHarness()
        try harness.startSimulator("coins: 30\nrate_per_s: 15\nseed: 21\nfaults: {disconnect_at: [12], disconnect_ms: 600}\n")
        try harness.startDaemon()
        let truth = try harness.simulatorTruth()
        #expect(try harness.stopDaemon() == 0)
        #expect(truth.connections.connects == 2)
        let decisions = try harness.decisions()
        #expect(DaemonHarness.disagreements(decisions, truth).isEmpty, "\(DaemonHarness.disagreements(decisions, truth))")
        let audit = try harness.audit()
        #expect(audit.isClean, "\(audit.problems)")
        let kinds = try harness.ledger().events(since: 0).map(\.kind)
        let lost = try #require(kinds.firstIndex(of: "source_lost"))
        #expect(kinds[lost...].contains("source_connected"))
        #expect(decisions.count == 30)
    }

    @Test("bounces, lost confirmations and a power loss mid-coin: credit follows the cash box, the rest is returned or unconfirmed")
    func confirmations() throws {
        let harness = try DaemonHarness(source: "{kind: serial, device: mech, baud: 9600, confirm_window_ms: 300}")
        try harness.startSimulator("""
            coins: 60
            rate_per_s: 8
            seed: 17
            mix: {quarter: 2, dime: 1}
            faults: {bounce: 0.1, lost_confirmation: 0.2, power_loss_at: [30]}
            """)
        try harness.startDaemon()
        let truth = try harness.simulatorTruth()
        let status = try CoinMechConnection(path: harness.socket).request("status")
        #expect(try harness.stopDaemon() == 0, "\(harness.daemonLog)")
        #expect(truth.outcomes.bounced > 0 && truth.mech.confirmationsLost > 0 && truth.outcomes.powerLost > 0)
        let audit = try harness.audit()
        #expect(audit.isClean, "\(audit.problems)")
        #expect(audit.unconfirmed.count == truth.outcomes.powerLost)
        // What the totals show is what reached the cash box, less what the power loss hid.
        let hidden = truth.coins.filter { $0.confirmation == "power_lost" && $0.fate == "stored" }
            .reduce(into: [String: Int64]()) { $0[$1.currency!, default: 0] += $1.valueMinor! }
        let expected = truth.storedValue.merging(hidden) { $0 - $1 }.filter { $0.value != 0 }
        #expect(Totals.value(of: try harness.ledger().totals().current) == expected)
        #expect(status["counters"]?["returned_after_accept"]?.int == Int64(truth.outcomes.bounced))
        #expect((status["counters"]?["queries"]?.int ?? 0) >= Int64(truth.mech.confirmationsLost))
        let unconfirmedTotals = try harness.ledger().totals().unconfirmed
        #expect(unconfirmedTotals.reduce(0) { $0 + $1.count } == Int64(truth.outcomes.powerLost))
    }

    // The money review's windows 2 and 3 against the real mech's simulator: the mech reboots
    // each time the daemon goes away (the new boot only learnt from SESSION at the next
    // connect), and measures two coins again under their number.
    @Test("the mech reboots while the daemon is away and sends coins again with new figures: the money is right against the truth")
    func rebootsWhileAwayAndFalseDuplicates() throws {
        let harness = try DaemonHarness(source: "{kind: serial, device: mech, baud: 9600, confirm_window_ms: 300}")
        try harness.startSimulator("""
            coins: 0
            rate_per_s: 10
            seed: 29
            mix: {quarter: 2, dime: 1}
            faults: {lost_confirmation: 0.2, false_duplicate_at: [3, 8], reboot_while_away_every: 1}
            """)
        for round in 1...3 {
            try harness.startDaemon()
            let client = try CoinMechConnection(path: harness.socketWhenUp())
            try TestSupport.waitUntil("ten coins accepted after start \(round)", timeout: 30) {
                (try? client.request("status")["counters"]?["accepted"]?.int ?? 0) ?? 0 >= 10
            }
            if round < 3 { #expect(try harness.stopDaemon() == 0, "\(harness.daemonLog)") }
        }
        let truth = try harness.stopSimulatorAndReadTruth()
        #expect(try harness.stopDaemon() == 0, "\(harness.daemonLog)")
        #expect(truth.faultsInjected.rebootsWhileAway == 2 && truth.mech.boots.count == 3)
        #expect(truth.faultsInjected.falseDuplicates == 2)
        let events = try harness.ledger().events(since: 0, limit: 100_000)
        #expect(events.filter { $0.kind == "mech_status" && ($0.detail ?? "").contains("\"sequence_conflict\"") }.count == 2)
        #expect(Set(try harness.ledger().boots(source: "serial").values) == Set(truth.mech.boots))
        let audit = try harness.audit()
        #expect(audit.isClean, "\(audit.problems)")
        #expect(audit.coins > 25)
    }

    @Test("a paused daemon (three 1 s SIGSTOPs at 12 coins/s) credits none of the coins the mech returned meanwhile")
    func stalls() throws {
        let harness = try DaemonHarness()
        try harness.startSimulator("coins: 0\nrate_per_s: 12\nseed: 41\nmix: {quarter: 2, dime: 1}\nbaud: 19200\n")
        try harness.startDaemon()
        let client = try CoinMechConnection(path: harness.socketWhenUp())
        let daemon = try #require(harness.daemon)
        for round in 1...3 {
            let accepted = try client.request("status")["counters"]!["accepted"]!.int!
            try TestSupport.waitUntil("coins accepted before stall \(round)", timeout: 20) {
                try client.request("status")["counters"]!["accepted"]!.int! >= accepted + 5
            }
            daemon.signal(SIGSTOP)
            usleep(1_000_000)  // the stall itself: the mech gives up on what it sends meanwhile
            daemon.signal(SIGCONT)
        }
        let truth = try harness.stopSimulatorAndReadTruth()
        let status = try client.request("status")
        #expect(try harness.stopDaemon() == 0, "\(harness.daemonLog)")
        // The mech returned the coins it sent during the stalls…
        #expect(truth.outcomes.deadlineMisses >= 3 * 8)
        // …and the ledger credits none of them, and knows most for late (the mech's clock).
        let audit = try harness.audit()
        #expect(audit.isClean, "\(audit.problems)")
        #expect(audit.phantom.isEmpty)
        #expect(status["counters"]?["deadline_passed"]?.int ?? 0 > 0)
    }

    @Test("every sentence sent twice in one write: one decision, the same answer twice, counters count coins")
    func repeatedInOneBatch() throws {
        let harness = try DaemonHarness()
        // Unpaced: both copies arrive in one read, so they are decided in one batch.
        try harness.startSimulator("coins: 20\nrate_per_s: 10\nseed: 33\nmix: {quarter: 1}\nothers: {slug: 0.2}\nbaud: 0\nfaults: {duplicate: 1}\n")
        try harness.startDaemon()
        let truth = try harness.simulatorTruth()
        let status = try CoinMechConnection(path: harness.socket).request("status")
        #expect(try harness.stopDaemon() == 0, "\(harness.daemonLog)")
        #expect(truth.faultsInjected.duplicates == 20)
        let decisions = try harness.decisions()
        #expect(decisions.count == 20)
        // Each copy got an answer, and the same one (coinsim counts a second answer as a duplicate decision).
        #expect(truth.protocolErrors.duplicateDecisions == 20)
        #expect(DaemonHarness.disagreements(decisions, truth).isEmpty, "\(DaemonHarness.disagreements(decisions, truth))")
        let accepts = Int64(decisions.filter { $0.verdict == "accept" }.count)
        #expect(status["counters"]?["accepted"]?.int == accepts)
        #expect(status["counters"]?["rejected"]?.int == 20 - accepts)
        #expect(status["counters"]?["readings"]?.int == 20)
        #expect(status["counters"]?["duplicates"]?.int == 20)
        let audit = try harness.audit()
        #expect(audit.isClean, "\(audit.problems)")
    }

    @Test("a plugin that lies about money gets no credit: its coins are returned, the link is named in status")
    func lyingPlugin() throws {
        let plugins = TestSupport.temporaryDirectory("liar-plugins")
        _ = try TestSupport.compileFixture("misbehaving", into: plugins)
        // Its one link declares no currency: the cabinet names its own.
        let harness = try DaemonHarness(chain: "chain:\n  - {name: third-party, plugin: misbehaving, config: {mode: liar}}\n", source: "{kind: serial, device: mech, baud: 9600, currencies: [USD]}")
        try harness.startSimulator("coins: 8\nrate_per_s: 8\nseed: 9\nmix: {quarter: 1}\n")
        try harness.startDaemon(pluginDirectory: plugins)
        let truth = try harness.simulatorTruth()
        let status = try CoinMechConnection(path: harness.socket).request("status")
        #expect(try harness.stopDaemon() == 0, "\(harness.daemonLog)")
        #expect(truth.outcomes.accepted == 0)
        let decisions = try harness.decisions()
        #expect(decisions.count == 8)
        #expect(decisions.allSatisfy { $0.verdict == "reject" && $0.reason == "plugin_error" && $0.link == "third-party" })
        #expect(try harness.ledger().totals().lifetime.isEmpty)
        let errors = try #require(status["plugin_errors"]?.array)
        #expect(errors.first?["link"] == "third-party")
        #expect(errors.first?["count"]?.int == 8)
        #expect(errors.first?["last"]?.string?.contains("code is not printable ASCII") == true)
    }

    @Test("a restart keeps the totals, and device numbering continues in a new epoch")
    func restartKeepsTotals() throws {
        let harness = try DaemonHarness()
        var expected: [String: Int64] = [:]
        for run in 0..<2 {
            // The same mech, powered up again between the runs: its next boot number.
            try harness.startSimulator("coins: 15\nrate_per_s: 20\nseed: \(30 + run)\nmix: {quarter: 1, dime: 1}\nfirmware: {boot: \(run + 1)}\n")
            try harness.startDaemon()
            let truth = try harness.simulatorTruth()
            #expect(try harness.stopDaemon() == 0)
            expected.merge(truth.storedValue) { $0 + $1 }
        }
        let totals = try harness.ledger().totals()
        #expect(Totals.value(of: totals.lifetime) == expected)
        #expect(Totals.value(of: totals.current) == expected)
        #expect(try harness.decisions().count == 30)
        #expect(Set(try harness.decisions().compactMap(\.epoch)).count == 2)
        let audit = try harness.audit()
        #expect(audit.isClean, "\(audit.problems)")
    }

    @Test("kill -9 mid-run, then a restart: nothing lost, doubled or credited that the mech returned")
    func killNine() throws {
        let harness = try DaemonHarness()
        try harness.startSimulator("coins: 120\nrate_per_s: 40\nseed: 5\nmix: {quarter: 1}\nbaud: 115200\n")
        try harness.startDaemon()
        let client = try CoinMechConnection(path: harness.socketWhenUp())
        try TestSupport.waitUntil("20 coins accepted", timeout: 30) { (try client.request("status")["counters"]?["accepted"]?.int ?? 0) >= 20 }
        #expect(try harness.stopDaemon(SIGKILL) == 137)
        // The mech carries on (it returns what nobody answers); a new daemon reconciles.
        try harness.startDaemon()
        let truth = try harness.simulatorTruth()
        #expect(try harness.stopDaemon() == 0, "\(harness.daemonLog)")
        #expect(truth.connections.connects == 2)
        let audit = try harness.audit()
        #expect(audit.isClean, "\(audit.problems)")
        #expect(audit.credited.count == audit.stored.count)
        #expect(try harness.creditedValue() == truth.storedValue)
    }

    @Test("killed with a decision synced in the decision journal and not on the ledger: the next start replays it, says so, and the mech's word settles the coin; nothing lost or doubled")
    func killedBetweenTheJournalAndTheLedger() throws {
        let harness = try DaemonHarness()
        try harness.startSimulator("coins: 40\nrate_per_s: 20\nseed: 6\nmix: {quarter: 1}\nbaud: 115200\n")
        try harness.startDaemon(environment: ["COINMECH_FAILPOINTS": "journalled=kill@4"])
        let killed = try #require(harness.daemon)
        #expect(killed.wait(timeout: 30) == 137, "\(harness.daemonLog)")
        // The fourth batch's decisions are in the journal only (the journal also still holds
        // the decisions before it, which are on the ledger: it is trimmed only once long).
        let journal = String(decoding: FileManager.default.contents(atPath: DecisionJournal.path(directory: "\(harness.dir)/state")) ?? Data(), as: UTF8.self)
        let inJournal = Set(journal.split(separator: "\n").compactMap { line in
            line.firstRange(of: "\"devseq\":").flatMap { Int64(line[$0.upperBound...].prefix { $0.isNumber }) }
        })
        let journalled = inJournal.subtracting(try harness.decisions().compactMap(\.deviceSeq))
        #expect(!journalled.isEmpty, "\(journal)")
        try harness.startDaemon()
        let truth = try harness.simulatorTruth()
        #expect(try harness.stopDaemon() == 0, "\(harness.daemonLog)")
        #expect(harness.daemonLog.contains("the decision journal is replayed") && harness.daemonLog.contains("recorded=\(journalled.count)"), "\(harness.daemonLog)")
        // Never answered (the kill came before the answers): the mech returned them at its deadline.
        let replayed = try harness.decisions().filter { journalled.contains($0.deviceSeq ?? -1) }
        #expect(replayed.count == journalled.count && replayed.allSatisfy { $0.state == "returned" }, "\(replayed)")
        let audit = try harness.audit()
        #expect(audit.isClean, "\(audit.problems)")
        #expect(try harness.creditedValue() == truth.storedValue)
    }

    @Test("SIGINT stops as cleanly as SIGTERM")
    func sigint() throws {
        let harness = try DaemonHarness()
        try harness.startSimulator("coins: 5\nrate_per_s: 20\n")
        try harness.startDaemon()
        _ = try harness.simulatorTruth()
        #expect(try harness.stopDaemon(SIGINT) == 0)
        #expect(try harness.ledger().events(since: 0).last?.kind == "shutdown")
    }

    @Test("a full ledger: no coin is credited unrecorded, the mech is inhibited, the error is loud")
    func ledgerFull() throws {
        let harness = try DaemonHarness(extra: "ledger: {max_size_mb: 0.0905}")
        try harness.startSimulator("coins: 400\nrate_per_s: 80\nseed: 8\nmix: {quarter: 1}\nbaud: 115200\n")
        try harness.startDaemon()
        let truth = try harness.simulatorTruth()
        #expect(try harness.stopDaemon() == 0)
        let inLedger = DaemonHarness.acceptedInLedger(try harness.decisions())
        #expect(DaemonHarness.acceptedInTruth(truth).isSubset(of: inLedger))
        #expect(truth.outcomes.inhibited > 0, "the mech was never inhibited")
        #expect(harness.daemonLog.contains("<2>coinmechd: ledger cannot write: returning every coin and inhibiting the mech"))
        // Credits the full ledger could not record stay pending (asked about again once it has
        // room); none is lost, doubled or credited wrongly.
        let audit = try harness.audit()
        #expect(audit.lost.isEmpty && audit.doubled.isEmpty && audit.phantom.isEmpty, "\(audit.problems)")
    }
}

@Suite("coinmechd configuration errors")
struct DaemonConfigurationTests {
    func run(_ text: String, check: Bool = false, file: String = "coinmechd.yaml") throws -> (Int32?, String) {
        let dir = TestSupport.temporaryDirectory("config")
        try text.write(toFile: "\(dir)/\(file)", atomically: true, encoding: .utf8)
        let daemon = try ChildProcess("coinmechd", ["--config", "\(dir)/coinmechd.yaml", "--plugin-dir", TestSupport.binDirectory] + (check ? ["--check-config"] : []))
        let status = daemon.wait(timeout: 20)
        return (status, daemon.stderr.replacingOccurrences(of: dir + "/", with: ""))
    }

    static let valid = "source: {device: /dev/null, currencies: [USD]}\nchain:\n  - plugin: sanity\n"

    @Test("each configuration error names the file, the line and the key, and exits 1", arguments: [
        ("sorce: {device: x}\nchain: [{plugin: sanity}]\n", "coinmechd: coinmechd.yaml:1: key 'sorce': unknown key (known here: cache_dir, chain, ledger, log_level, plugin_dir, plugins, runtime_dir, socket, source, state_dir)"),
        ("source: {device: x, baud: fast}\nchain: [{plugin: sanity}]\n", "coinmechd: coinmechd.yaml:1: key 'source.baud': must be a whole number, got 'fast'"),
        ("source: {device: x}\nchain:\n  - plugin: sanity\n  - plugin: nope\n", "coinmechd: coinmechd.yaml:4: key 'chain[1].plugin': plugin 'nope' not found (tried"),
        ("source: {device: x}\nlog_level: loud\nchain: [{plugin: sanity}]\n", "coinmechd: coinmechd.yaml:2: key 'log_level': must be one of trace, debug, info, notice, warning, error, critical"),
        ("source: {device: x}\n", "coinmechd: coinmechd.yaml:1: key 'chain': is required: a list of links, e.g. - plugin: sanity"),
        ("source: {device: x}\nchain:\n  - plugin: sanity\n    confg: {}\n", "coinmechd: coinmechd.yaml:4: key 'chain[0].confg': unknown key (known here: budget_ms, config, isolation, memory_mb, name, plugin, readable, sandbox, user)"),
        ("source: {device: x}\nchain:\n  - {plugin: sanity, isolation: process, sandbox: maybe}\n", "coinmechd: coinmechd.yaml:3: key 'chain[0].sandbox': must be required (a sandbox layer this machine lacks refuses the link), warn (the link runs with the layers there are) or off (none: for measuring or debugging)"),
        ("source: {device: x}\nchain:\n  - {plugin: sanity, sandbox: warn}\n", "coinmechd: coinmechd.yaml:3: key 'chain[0].sandbox': needs isolation: process (a link in process shares the daemon's process)"),
        ("source: {device: x}\nplugins: {memory_mb: 8}\nchain: [{plugin: sanity}]\n", "coinmechd: coinmechd.yaml:2: key 'plugins.memory_mb': must be between 64 and 65536 (MiB of address space for the plugin host)"),
        ("source: {device: x}\nchain:\n  - {plugin: sanity, isolation: sideways}\n", "coinmechd: coinmechd.yaml:3: key 'chain[0].isolation': must be in-process or process"),
        ("source: {device: x}\nchain:\n  - {plugin: sanity, user: nobody}\n", "coinmechd: coinmechd.yaml:3: key 'chain[0].user': needs isolation: process (a link in process runs as the daemon)"),
        ("source: {device: x}\nchain:\n  - {plugin: sanity, budget_ms: 0}\n", "coinmechd: coinmechd.yaml:3: key 'chain[0].budget_ms': must be between 0.1 and 10000 (milliseconds per call)"),
        ("source: {device: x}\nplugins: {isolation: maybe}\nchain: [{plugin: sanity}]\n", "coinmechd: coinmechd.yaml:2: key 'plugins.isolation': must be auto (shipped plugins in process, others isolated), in-process or process"),
        ("source: {device: x}\nplugins: {max_crashes: 0}\nchain: [{plugin: sanity}]\n", "coinmechd: coinmechd.yaml:2: key 'plugins.max_crashes': must be between 1 and 100"),
        ("source: {device: x\nchain: []\n", "coinmechd: coinmechd.yaml:2: not valid YAML"),
        ("source: {device: x}\nsocket: {mode: rw}\nchain: [{plugin: sanity}]\n", "coinmechd: coinmechd.yaml:2: key 'socket.mode': must be an octal file mode such as \"0660\""),
        ("source: {device: x, name: a-name-that-is-far-too-long-for-a-reading}\nchain: [{plugin: sanity}]\n", "coinmechd: coinmechd.yaml:1: key 'source.name': must be 1 to 31 bytes, got 41"),
        ("source: {device: x, baud: 2400}\nchain: [{plugin: sanity}]\n", "coinmechd: coinmechd.yaml:1: key 'source.deadline_ms': at 2400 baud an answer takes 75 ms on the line, which with commit_allowance_ms 10 leaves no time to decide within 50 ms; set deadline_ms to how long your mech waits"),
        ("source: {device: x, deadline_ms: 2}\nchain: [{plugin: sanity}]\n", "coinmechd: coinmechd.yaml:1: key 'source.deadline_ms': must be between 5 and 60000"),
        ("source: {device: x, deadline_ms: 50, commit_allowance_ms: 50}\nchain: [{plugin: sanity}]\n", "coinmechd: coinmechd.yaml:1: key 'source.commit_allowance_ms': must be at least 0 and below deadline_ms (50.0)"),
        ("source: {kind: gpio-replay, file: e.txt, commit_allowance_ms: 5, pulse: {line: 0}}\nchain: [{plugin: sanity}]\n", "coinmechd: coinmechd.yaml:1: key 'source.commit_allowance_ms': needs deadline_ms: this source kind has no answer deadline unless one is set"),
        ("source: {kind: gpio-replay, file: e.txt}\nchain: [{plugin: sanity}]\n", "coinmechd: coinmechd.yaml:1: key 'source': a gpio-replay source needs exactly one of 'pulse' {line: N} or 'gates' {a, b, distance_mm}"),
        ("source: {kind: gpio, chip: c, gates: {a: 1, b: 1, distance_mm: 50}}\nchain: [{plugin: sanity}]\n", "coinmechd: coinmechd.yaml:1: key 'source.gates': a and b, the two gates' line offsets, are required and must differ"),
        ("source: {device: x}\nchain:\n  - plugin: sanity\n  - name: deadline\n    plugin: sanity\n", "coinmechd: coinmechd.yaml:4: key 'chain[1].name': chain link 2 'deadline': the host names its own decisions so (reserved: deadline, inhibit, source, teach, unrecognized); give the link another name"),
        ("source: {device: x, confirm_window_ms: 10}\nchain: [{plugin: sanity}]\n", "coinmechd: coinmechd.yaml:1: key 'source.confirm_window_ms': must be between 50 and 60000"),
        ("source: {kind: gpio-replay, file: e.txt, confirmations: true, pulse: {line: 0}}\nchain: [{plugin: sanity}]\n", "coinmechd: coinmechd.yaml:1: key 'source.confirmations': applies to serial sources only"),
        ("source: {device: x, currencies: []}\nchain: [{plugin: sanity}]\n", "coinmechd: coinmechd.yaml:1: key 'source.currencies': must name at least one currency, e.g. [USD]"),
        ("source: {device: x, currencies: [usd]}\nchain: [{plugin: sanity}]\n", "coinmechd: coinmechd.yaml:1: key 'source.currencies': 'usd' is not a currency code (three capital letters, e.g. USD)"),
        ("source: {device: x, currencies: [CHF]}\nchain: [{plugin: sanity}]\n", "coinmechd: coinmechd.yaml:1: key 'source.currencies': CoinMech has no coin figures for CHF (it has USD, EUR, GBP): declare the coins this cabinet takes in it under source.tokens"),
        ("source:\n  device: x\n  currencies: [USD]\n  tokens:\n    - {code: TOKEN, value: 0}\nchain: [{plugin: sanity}]\n", "coinmechd: coinmechd.yaml:5: key 'source.tokens[0].value': is required: what the token is worth in minor units of its currency (at least 1)"),
        ("source:\n  device: x\n  currencies: [USD]\n  tokens:\n    - {code: TOKEN, value: 25, currency: EUR}\nchain: [{plugin: sanity}]\n", "coinmechd: coinmechd.yaml:5: key 'source.tokens[0].currency': EUR is not one of source.currencies (USD)"),
    ])
    func errors(text: String, message: String) throws {
        let (status, stderr) = try run(text)
        #expect(status == 1)
        #expect(stderr.hasPrefix(message), "got: \(stderr)")
    }

    @Test("an unreadable configuration file says so")
    func unreadable() throws {
        let daemon = try ChildProcess("coinmechd", ["--config", "/nonexistent/coinmechd.yaml"])
        #expect(daemon.wait() == 1)
        #expect(daemon.stderr == "coinmechd: /nonexistent/coinmechd.yaml: cannot read file: no such file\n")
    }

    @Test("--check-config loads the plugins and reports a configuration a plugin refuses, at its line")
    func checkConfig() throws {
        let bad = "source: {device: x}\nchain:\n  - plugin: sanity\n  - name: money\n    plugin: coin-table\n    config: {currency: XXX}\n"
        let (status, stderr) = try run(bad, check: true)
        #expect(status == 1)
        #expect(stderr == "coinmechd: coinmechd.yaml:6: key 'chain[1].config': plugin 'coin-table' refused its configuration: key 'currency': no built-in table for 'XXX' (known: USD, EUR, GBP)\n")
        let (okStatus, _) = try run(Self.valid, check: true)
        #expect(okStatus == 0)
    }

    @Test("the shipped configurations are valid", arguments: ["coinmechd.yaml", "coinmechd.demo.yaml", "coinmechd.demo-changer.yaml", "cctalk.yaml", "cctalk-hoppers.yaml", "mdb.yaml"])
    func shipped(name: String) throws {
        let daemon = try ChildProcess("coinmechd", ["--config", "\(TestSupport.packageRoot)/config/\(name)", "--plugin-dir", TestSupport.binDirectory, "--check-config"])
        #expect(daemon.wait() == 0, "\(daemon.stderr)")
    }
}
