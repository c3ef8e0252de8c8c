import CoinMechHarness
import CoinMechCalibration
@testable import CoinMechDaemon
@testable import CoinMechTeach
import CoinMechClient
import CoinMechLedger
import CoinMechModel
import CoinMechPlugins
import CoinMechPluginKit
import CoinMechProtocol
@testable import CoinMechTestSupport
import CoinSimCore
import Foundation
import Testing

/// Teach mode with real processes: coinsim plays a mech whose load cell reads 5 % heavy and whose
/// thickness sensor reads 4 % thick; coinmechd decides with the real coin-table; coinctl teaches it.
@Suite("Teach mode end to end: a biased mech, taught from sample coins, returns fewer genuine coins", .serialized)
struct TeachEndToEndTests {
    static let chain = """
        chain:
          - plugin: sanity
          - name: eur
            plugin: coin-table
            config:
              currency: EUR
              sensor_noise: {diameter: 0.006, weight: 0.02, thickness: 0.02}
              calibration: ${state_dir}/calibration/serial-EUR.json
              # Windows held still, so what changes is teaching alone (following the drift is
              # CoinTableDriftTests' subject, and learns this bias too).
              follow_drift: false
        """

    /// A session of the biased mech: its `boot`th power-up, `coins` coins of `mix`. The bias is
    /// 2σ on weight and 1.5σ on thickness of a nominal window, so nominal windows return about
    /// one genuine coin in eight; the mint spread and the noise are what coin-table assumes.
    static func session(seed: Int, coins: Int, mix: String, boot: Int) -> String {
        """
        seed: \(seed)
        coins: \(coins)
        rate_per_s: 40
        baud: 115200
        currency: EUR
        mix: \(mix)
        noise: {diameter: 0.006, weight: 0.02, thickness: 0.02}
        mech:
          bias: {weight: 0.05, thickness: 0.04}
          mint_spread: true
        firmware: {boot: \(boot)}
        """
    }

    /// Runs coinctl with `arguments` against the harness's daemon: (exit status, standard output, standard error).
    static func coinctl(_ harness: DaemonHarness, _ arguments: [String]) throws -> (Int32?, String, String) {
        let process = try ChildProcess("coinctl", arguments + ["--socket", harness.socket])
        let out = String(decoding: process.readToEnd(), as: UTF8.self)
        return (process.wait(timeout: 30), out, process.stderr)
    }

    /// The error message of a refused request.
    static func refusal(_ client: CoinMechConnection, _ cmd: String, _ arguments: [String: JSON] = [:]) -> String? {
        do {
            _ = try client.request(cmd, arguments)
            return nil
        } catch ClientError.server(let code, let message) {
            return "\(code): \(message)"
        } catch {
            return "\(error)"
        }
    }

    /// Genuine coins of a session the chain returned (a coin the mech returned for want of an
    /// answer in time says nothing of the windows), and accepts of a coin other than the one inserted.
    static func judge(_ truth: GroundTruth, _ decisions: [LedgerEvent]) -> (genuine: Int, returned: Int, wrong: [String]) {
        let inserted = Dictionary(uniqueKeysWithValues: truth.coins.map { ($0.devseq, $0.kind) })
        let genuine = truth.coins.filter { $0.kind.hasPrefix("EUR:") }
        let wrong = decisions.filter { $0.verdict == "accept" && inserted[UInt64($0.deviceSeq!)] != "EUR:\($0.denomination!)" }
            .map { "devseq \($0.deviceSeq!): \(inserted[UInt64($0.deviceSeq!)] ?? "?") credited as \($0.denomination!)" }
        return (genuine.count, genuine.filter { $0.outcome == "return" }.count, wrong)
    }

    @Test("teach start → every coin returned, none credited → status → commit → reload: genuine coins returned fall from about 1 in 8 to almost none")
    func teachCycle() throws {
        let harness = try DaemonHarness(chain: Self.chain)
        let before = Self.session(seed: 16, coins: 200, mix: "{EUR_50c: 1, EUR_1: 1}", boot: 1)
        try harness.startSimulator(before)
        try harness.startDaemon()
        let client = try CoinMechConnection(path: harness.socketWhenUp())
        let truthBefore = try harness.simulatorTruth()

        // Refused clearly: a currency or code the chain's coin-table does not know; nothing to commit.
        #expect(Self.refusal(client, "teach_start", ["currency": "GBP", "code": "GBP_1"])
            == "failed: no coin-table link for GBP in the chain (eur: EUR): teach mode teaches a coin-table link's windows")
        #expect(Self.refusal(client, "teach_start", ["currency": "EUR", "code": "EUR_3"])?
            .hasPrefix("failed: link 'eur' has no EUR denomination 'EUR_3' (known: EUR_1c, EUR_2c, EUR_5c") == true)
        #expect(Self.refusal(client, "teach_start", ["currency": "EUR", "code": "EUR_50c", "coins": 5])
            == "bad_request: \"coins\" must be a whole number from 10 to 1000")
        #expect(Self.refusal(client, "teach_commit") == "failed: not teaching: start with coinctl teach start CURRENCY CODE")

        // Teach the 50c with coinctl: 30 sample coins, every one returned.
        let calibrationFile = URL(fileURLWithPath: "\(harness.dir)/state/calibration/serial-EUR.json").standardizedFileURL.path
        let (started, startOut, _) = try Self.coinctl(harness, ["teach", "start", "EUR", "EUR_50c", "--coins", "30"])
        #expect(started == 0)
        #expect(startOut.hasPrefix("teaching EUR EUR_50c on link 'eur' (event #"), "\(startOut)")
        #expect(startOut.contains("coinctl teach commit   writes the window to \(calibrationFile) and reloads the chain"))
        #expect(Self.refusal(client, "teach_start", ["currency": "EUR", "code": "EUR_1"])?
            .hasPrefix("failed: already teaching EUR EUR_50c (0 of 30 sample coins in, started by") == true)
        try harness.startSimulator(Self.session(seed: 50, coins: 30, mix: "{EUR_50c: 1}", boot: 2))
        let truthFifty = try harness.simulatorTruth()
        // None taken: returned, or (on a machine too loaded to answer within the mech's
        // deadline) not answered in time, which the mech returns too.
        #expect(truthFifty.coins.count == 30 && truthFifty.coins.allSatisfy { ["return", "deadline_miss"].contains($0.outcome) })

        // Status for programs: the figures of 30 coins, the €1 as a neighbour.
        try TestSupport.waitUntil("30 samples", timeout: 10) { try client.request("teach_status")["collected"]?.int == 30 }
        let status = try client.request("teach_status")
        #expect(status["teaching"] == true && status["code"] == "EUR_50c" && status["committable"] == true)
        #expect(status["kept"]?.int ?? 0 >= 29)
        let weight = try #require(status["axes"]?["weight"])
        #expect(abs((weight["mean"]?.double ?? 0) / (7.80 * 1.05) - 1) < 0.02, "\(weight)")
        #expect(abs((weight["bias_percent"]?.double ?? 0) - 5) < 2, "\(weight)")
        #expect((weight["sigma"]?.double ?? 0) > 0.1 && (weight["window"]?["low"]?.double ?? 99) < (weight["mean"]?.double ?? 0))
        let neighbours = try #require(status["neighbours"]?.array)
        let euro = try #require(neighbours.first { $0["name"] == "EUR_1" })
        #expect(euro["origin"] == "nominal" && (euro["separation_sigma"]?.double ?? 0) > 3)
        #expect(status["samples"]?.array?.count == 30)

        // Status for people: the table, a histogram per axis with the windows marked; and --json.
        let (shown, table, _) = try Self.coinctl(harness, ["teach", "status"])
        #expect(shown == 0)
        #expect(table.hasPrefix("teaching EUR EUR_50c on link 'eur' for "), "\(table)")
        #expect(table.contains("30 of 30 sample coins"))
        #expect(table.contains("\naxis ") && table.contains("\nweight        30 "), "\(table)")
        #expect(table.contains("\ndiameter (mm): 30 samples in bins of ") && table.contains("\nthickness (mm): 30 samples"))
        #expect(table.contains(" EUR_50c (taught) ") && table.contains("EUR_1 (nominal)"), "\(table)")
        #expect(table.contains("\nneighbours: separation on diameter and weight"))
        #expect(table.split(separator: "\n").contains { $0.contains("█") })
        let (json, jsonOut, _) = try Self.coinctl(harness, ["teach", "status", "--json"])
        #expect(json == 0)
        #expect(JSON.parse(jsonOut.trimmingCharacters(in: .whitespacesAndNewlines))?["collected"]?.int == 30)

        // Commit: written, recorded with the file's SHA-256, and the chain reloaded to use it.
        let (committed, commitOut, commitErr) = try Self.coinctl(harness, ["teach", "commit"])
        #expect(committed == 0, "\(commitErr)")
        #expect(commitOut.hasPrefix("taught EUR EUR_50c from "), "\(commitOut)")
        #expect(commitOut.contains("\nwritten to \(calibrationFile) (sha256 "))
        #expect(commitOut.contains("\nchain reloaded: generation 2; coin-table uses the taught window"))
        let written = try CoinCalibration.load(path: calibrationFile)
        #expect(written.currency == "EUR" && written.mech == "serial" && Set(written.denominations.keys) == ["EUR_50c"])
        let commitEvent = try #require(try harness.ledger().events(since: 0, limit: 10_000).last { $0.kind == "teach_commit" })
        let detail = try #require(commitEvent.detail.flatMap(JSON.parse))
        let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: calibrationFile)))
        #expect(detail["sha256"]?.string == SHA256.hex(bytes) && detail["code"] == "EUR_50c" && detail["file"]?.string == calibrationFile)
        #expect(try client.request("teach_status") == ["teaching": false])

        // The €1 through the socket API alone; the 50c taught before is kept in the file.
        let euroStart = try client.request("teach_start", ["currency": "EUR", "code": "EUR_1", "coins": 30])
        #expect(euroStart["file"]?.string == calibrationFile)
        try harness.startSimulator(Self.session(seed: 51, coins: 30, mix: "{EUR_1: 1}", boot: 3))
        #expect(try harness.simulatorTruth().coins.allSatisfy { ["return", "deadline_miss"].contains($0.outcome) })
        try TestSupport.waitUntil("30 samples", timeout: 10) { try client.request("teach_status")["collected"]?.int == 30 }
        let euroCommit = try client.request("teach_commit", timeout: 30)
        #expect(euroCommit["code"] == "EUR_1" && euroCommit["reload"]?["generation"]?.int == 3)
        #expect(Set(try CoinCalibration.load(path: calibrationFile).denominations.keys) == ["EUR_50c", "EUR_1"])
        let described = try #require(client.request("chain")["links"]?.array?.last?["description"]?["denominations"]?.array)
        #expect(described.filter { $0["origin"] == "taught" }.compactMap { $0["name"]?.string }.sorted() == ["EUR_1", "EUR_50c"])

        // The same coins as before, read by the same biased mech, on taught windows.
        try harness.startSimulator(before.replacingOccurrences(of: "boot: 1", with: "boot: 4"))
        let truthAfter = try harness.simulatorTruth()
        #expect(try harness.stopDaemon() == 0, "\(harness.daemonLog)")

        // Four sessions, four epochs; the teaching ones recorded as such and credited nothing.
        let decisions = try harness.decisions()
        let epochs = Array(Set(decisions.compactMap(\.epoch))).sorted()
        try #require(epochs.count == 4, "epochs \(epochs)")
        let bySession = epochs.map { epoch in decisions.filter { $0.epoch == epoch } }
        for taught in [bySession[1], bySession[2]] {
            #expect(taught.count == 30 && taught.allSatisfy { $0.verdict == "reject" && $0.reason == "teaching" && $0.link == "teach" })
        }
        let audit = try harness.audit()
        #expect(audit.isClean, "\(audit.problems)")
        let coins = try harness.ledger().events(since: 0, limit: 100_000).filter { $0.kind == "coin" }
        #expect(!coins.contains { $0.epoch == epochs[1] || $0.epoch == epochs[2] })
        #expect(try harness.creditedValue() == truthBefore.storedValue.merging(truthAfter.storedValue) { $0 + $1 })

        let nominal = Self.judge(truthBefore, bySession[0]), taught = Self.judge(truthAfter, bySession[3])
        print("teach mode end to end: genuine coins returned \(nominal.returned) of \(nominal.genuine) on nominal windows, "
            + "\(taught.returned) of \(taught.genuine) on taught windows")
        #expect(nominal.wrong.isEmpty && taught.wrong.isEmpty, "\(nominal.wrong + taught.wrong)")
        #expect(nominal.genuine == 200 && taught.genuine == 200)
        #expect(nominal.returned >= 12, "nominal windows returned \(nominal.returned) of 200: the mech is not biased enough to show anything")
        #expect(taught.returned * 4 <= nominal.returned, "returned: \(nominal.returned) nominal, \(taught.returned) taught")
    }

    @Test("a commit with too few samples is refused; abort leaves the file, the chain and crediting as they were")
    func abortLeavesEverything() throws {
        let harness = try DaemonHarness(chain: Self.chain)
        try harness.startSimulator(Self.session(seed: 7, coins: 6, mix: "{EUR_50c: 1}", boot: 1))
        try harness.startDaemon()
        let client = try CoinMechConnection(path: harness.socketWhenUp())
        _ = try client.request("teach_start", ["currency": "eur", "code": "EUR_50c"])
        _ = try harness.simulatorTruth()
        try TestSupport.waitUntil("6 samples", timeout: 10) { try client.request("teach_status")["collected"]?.int == 6 }
        let (refused, _, refusedErr) = try Self.coinctl(harness, ["teach", "commit"])
        #expect(refused == 1)
        #expect(refusedErr == "coinctl: only 6 sample coins of EUR EUR_50c are in; at least 10 are needed to commit (20 asked for): insert more, or abort (failed)\n")
        let (aborted, abortOut, _) = try Self.coinctl(harness, ["teach", "abort"])
        #expect(aborted == 0)
        #expect(abortOut.hasPrefix("teach mode ended (event #") && abortOut.contains("6 sample coins of EUR EUR_50c set aside, nothing written"))
        let (_, statusOut, _) = try Self.coinctl(harness, ["teach", "status"])
        #expect(statusOut == "not teaching (coinctl teach start CURRENCY CODE)\n")
        #expect(!FileManager.default.fileExists(atPath: "\(harness.dir)/state/calibration/serial-EUR.json"))
        #expect(try client.request("status")["chain_generation"]?.int == 1)

        // Coins are decided again, on the nominal windows.
        try harness.startSimulator(Self.session(seed: 8, coins: 10, mix: "{EUR_50c: 1}", boot: 2))
        let truth = try harness.simulatorTruth()
        #expect(try harness.stopDaemon() == 0)
        #expect(truth.coins.filter { $0.outcome == "accept" }.count >= 5)
        let kinds = try harness.ledger().events(since: 0, limit: 10_000).map(\.kind)
        #expect(kinds.filter { $0.hasPrefix("teach") } == ["teach_start", "teach_abort"])
        #expect(try harness.audit().isClean)
    }

    @Test("a calibration recorded but not renamed into place when the daemon stopped is put in place before the chain is built")
    func recoveredAtStart() throws {
        let harness = try DaemonHarness(chain: Self.chain)
        let file = URL(fileURLWithPath: "\(harness.dir)/state/calibration/serial-EUR.json").standardizedFileURL.path
        try FileManager.default.createDirectory(atPath: "\(harness.dir)/state/calibration", withIntermediateDirectories: true)
        let taught = try CoinCalibration.TaughtCoin.fit(TeachSamples.samples(TeachSamples.fifty, count: 20, seed: 11)
            .map { ($0.diameterMM, $0.weightG, $0.thicknessMM) })
        let bytes = Array((CoinCalibration(currency: "EUR", mech: "serial", denominations: ["EUR_50c": taught]).jsonText + "\n").utf8)
        try Data(bytes).write(to: URL(fileURLWithPath: CalibrationFiles.stagedPath(for: file)))
        _ = try harness.ledger().append([.note(.teachCommit(Occurrence.TeachCommitRecord(
            source: "serial", currency: "EUR", code: "EUR_50c", samples: 20, leftOut: 0, file: file, sha256: SHA256.hex(bytes), axes: [:], by: "root")))])
        try harness.startDaemon()
        let client = try CoinMechConnection(path: harness.socketWhenUp())
        let described = try #require(client.request("chain")["links"]?.array?.last?["description"]?["denominations"]?.array)
        #expect(described.filter { $0["origin"] == "taught" }.compactMap { $0["name"]?.string } == ["EUR_50c"])
        #expect(try harness.stopDaemon() == 0)
        #expect(harness.daemonLog.contains("teach mode: put in place \(file), recorded as event #1 before the daemon stopped"), "\(harness.daemonLog)")
    }

    @Test("a chain whose coin-table reads no calibration file is refused, saying what to add")
    func noCalibrationKey() throws {
        let harness = try DaemonHarness()  // USD coin-table without `calibration`
        try harness.startDaemon()
        let client = try CoinMechConnection(path: harness.socketWhenUp())
        #expect(Self.refusal(client, "teach_start", ["currency": "USD", "code": "quarter"])
            == "failed: link 'usd' reads no calibration file: add `calibration: ${state_dir}/calibration/serial-USD.json` to its config, reload, then teach")
        #expect(try harness.stopDaemon() == 0)
    }
}
