import CoinMechCalibration
import CoinMechChain
import CoinMechLedger
import CoinMechCore
@testable import CoinMechDaemon
@testable import CoinMechTeach
import CoinMechModel
import CoinMechPluginKit
import CoinMechPlugins
import CoinMechProtocol
import CoinMechSources
@testable import CoinMechTestSupport
import CoinSimCore
import Foundation
import Testing

/// Teach mode's statistics and its calibration files, without a daemon: what `teach status`
/// shows and what a commit writes.
@Suite("Teach mode's figures and files: strays left out, wrong coins refused, neighbours, staged then installed")
struct TeachReportTests {
    static func session(_ samples: [TeachSession.Sample], code: String = "EUR_50c", file: String = "/state/calibration/serial-EUR.json") -> TeachSession {
        TeachSession(request: TeachRequest(currency: "EUR", code: code, coins: 40, link: "eur", file: file), by: "ops",
                     startedAt: Instant(nanoseconds: 0), samples: samples)
    }

    /// The windows a real coin-table link for EUR describes.
    static func table() throws -> CoinTableDescription {
        let chain = try TestSupport.chain([LinkSpec(name: "eur", plugin: "coin-table", configJSON: #"{"currency":"EUR"}"#)])
        return try #require(chain.links[0].origin.description.flatMap(CoinTableDescription.parse))
    }

    @Test("a stray coin among the samples is left out and named; the rest make the window, and the €1 is a neighbour whose window overlaps")
    func strayLeftOut() throws {
        let samples = TeachSamples.samples(TeachSamples.fifty, count: 29, seed: 1) + TeachSamples.samples(TeachSamples.euro, count: 1, seed: 2, first: 30)
        let report = TeachReport(session: Self.session(samples), table: try Self.table(), minimumSamples: 10)
        #expect(report.kept.count == 29)
        #expect(report.leftOut.map(\.sample.deviceSeq) == [30])
        #expect(report.leftOut.first?.why.hasPrefix("diameter 23.") == true, "\(report.leftOut.map(\.why))")
        #expect(report.warnings.contains { $0.hasPrefix("left out device seq 30: diameter 23.") && $0.hasSuffix(": another coin?") })
        #expect(report.problems.isEmpty, "\(report.problems)")
        #expect(report.axes.map(\.name) == ["diameter", "weight", "thickness"])
        let diameter = report.axes[0]
        #expect(abs(diameter.mean - TeachSamples.fifty.diameter) < 0.1 && diameter.mint == TeachSamples.fifty.diameter)
        // The window coin-table will match with: ±4 σ widened by its standard error.
        let taught = try report.calibration().get()
        #expect(taught.samples == 29)
        #expect(abs(diameter.high - (taught.diameter.mean + 4 * taught.matchingSpread.diameter.sigma)) < 1e-9)
        let euro = try #require(report.neighbours.first { $0.name == "EUR_1" })
        #expect(euro.overlap && euro.origin == "nominal" && euro.apart > 3)
        #expect(report.warnings.contains { $0.hasPrefix("the taught EUR_50c window would overlap EUR_1's (centres ") })
        let json = report.json(source: "serial", inhibited: true, now: Instant(nanoseconds: 2_500_000_000))
        #expect(json["kept"] == 29 && json["collected"] == 30 && json["committable"] == true && json["started_s_ago"] == 2.5)
        #expect(json["left_out"]?.array?.first?["device_seq"] == 30)
        #expect(json["warnings"]?.array?.first?.string?.hasPrefix("the mech is inhibited") == true)
    }

    @Test("teach status read back as a type, field for field, as coinctl reads it: a reply that lacks one is refused by name")
    func statusReadBack() throws {
        let samples = TeachSamples.samples(TeachSamples.fifty, count: 29, seed: 1) + TeachSamples.samples(TeachSamples.euro, count: 1, seed: 2, first: 30)
        for table in [try Self.table(), nil] {
            let json = TeachReport(session: Self.session(samples), table: table, minimumSamples: 10)
                .json(source: "serial", inhibited: false, now: Instant(nanoseconds: 2_500_000_000))
            let reply = try TeachStatusReply(json: json)
            #expect(reply.json == json, "every field the daemon writes is in the type, and written back the same")
            #expect(try TeachStatusReply(json: JSON.parse(json.description)!) == reply, "through its text too")
            let session = try #require(reply.session)
            #expect(session.leftOut.map(\.deviceSeq) == [30] && session.samples.count == 30 && session.neighbours.isEmpty == (table == nil))
        }
        #expect(try TeachStatusReply(json: ["teaching": false]).session == nil)
        let json = TeachReport(session: Self.session(samples), table: nil, minimumSamples: 10)
            .json(source: "serial", inhibited: false, now: Instant(nanoseconds: 0))
        guard case .object(var object) = json else {
            Issue.record("teach status is not an object")
            return
        }
        object["axes"] = nil
        #expect(throws: ReplyError("a teach status reply has no object \"axes\"")) { try TeachStatusReply(json: .object(object)) }
    }

    @Test("half one coin, half another: nothing left out, but the spread is flagged")
    func mixedCoins() {
        let samples = TeachSamples.samples(TeachSamples.fifty, count: 15, seed: 3) + TeachSamples.samples(TeachSamples.euro, count: 15, seed: 4, first: 16)
        let report = TeachReport(session: Self.session(samples), table: nil, minimumSamples: 10)
        #expect(report.kept.count == 30 && report.leftOut.isEmpty)
        #expect(report.warnings.contains { $0.hasPrefix("diameter σ ") && $0.contains("mixed coins or a noisy sensor?") }, "\(report.warnings)")
    }

    @Test("too few coins, or coins that are not the denomination taught, cannot be committed")
    func problems() {
        let few = TeachReport(session: Self.session(TeachSamples.samples(TeachSamples.fifty, count: 6, seed: 5)), table: nil, minimumSamples: 10)
        #expect(few.problems == ["6 sample coins kept; at least 10 are needed to commit"])
        #expect(few.calibration().failure == TeachFailure("cannot commit: 6 sample coins kept; at least 10 are needed to commit"))
        // £2 coins taught as a 50c: far heavier than any 50c.
        let pounds = TeachReport(session: Self.session(TeachSamples.samples((28.4, 12.0, 2.5), count: 20, seed: 6)), table: nil, minimumSamples: 10)
        #expect(pounds.problems.contains { $0.hasPrefix("diameter mean 28.") && $0.hasSuffix("these are not EUR_50c coins? Abort and teach again") })
        #expect(pounds.problems.contains { $0.hasPrefix("weight mean 1") && $0.contains("% from the mint's 7.800 g") })
        #expect(pounds.calibration().failure?.message.hasPrefix("cannot commit: diameter mean 28.") == true)
        // Nothing yet: no figures, no neighbours.
        let none = TeachReport(session: Self.session([]), table: nil, minimumSamples: 10)
        #expect(none.axes.isEmpty && none.coin == nil && none.neighbours.isEmpty)
    }

    @Test("a calibration is staged beside its file, installed by a rename, keeps what was taught before, and is refused over a foreign or broken file")
    func files() throws {
        let directory = URL(fileURLWithPath: "\(TestSupport.temporaryDirectory("teach"))/calibration").standardizedFileURL.path
        let file = "\(directory)/serial-EUR.json"
        let files = CalibrationFiles(source: "serial")
        let fifty = TeachReport(session: Self.session(TeachSamples.samples(TeachSamples.fifty, count: 20, seed: 7), file: file), table: nil, minimumSamples: 10)
        let staged = try files.stage(fifty).get()
        #expect(!FileManager.default.fileExists(atPath: file))
        #expect(staged.stagedPath == "\(directory)/.serial-EUR.json.staged")
        let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: staged.stagedPath)))
        #expect(staged.record.sha256 == SHA256.hex(bytes))
        #expect(staged.record.samples == 20 && staged.record.file == file && staged.record.axes.keys.sorted() == ["diameter", "thickness", "weight"])
        _ = try files.install(staged).get()
        #expect(!FileManager.default.fileExists(atPath: staged.stagedPath))
        #expect(Set(try CoinCalibration.load(path: file).denominations.keys) == ["EUR_50c"])

        // A second denomination joins the first; a discarded one leaves the file alone.
        let euro = TeachReport(session: Self.session(TeachSamples.samples(TeachSamples.euro, count: 20, seed: 8), code: "EUR_1", file: file), table: nil, minimumSamples: 10)
        files.discard(try files.stage(euro).get())
        #expect(Set(try CoinCalibration.load(path: file).denominations.keys) == ["EUR_50c"])
        _ = try files.install(try files.stage(euro).get()).get()
        let both = try CoinCalibration.load(path: file)
        #expect(Set(both.denominations.keys) == ["EUR_50c", "EUR_1"] && both.mech == "serial" && both.currency == "EUR")

        try CoinCalibration(currency: "GBP", denominations: [:]).jsonText.write(toFile: file, atomically: true, encoding: .utf8)
        #expect(files.stage(euro).failure == TeachFailure("\(file) holds a calibration for GBP, not EUR: move it away, then commit again"))
        try "{broken".write(toFile: file, atomically: true, encoding: .utf8)
        #expect(files.stage(euro).failure?.message.hasPrefix("\(file) is not a calibration file (") == true)
        #expect(files.stage(euro).failure?.message.hasSuffix("move it away or mend it, then commit again") == true)
    }

    @Test("after a stop between record and rename, the recorded calibration is put in place at start; one never recorded is removed")
    func recovery() throws {
        let directory = URL(fileURLWithPath: "\(TestSupport.temporaryDirectory("teach"))/calibration").standardizedFileURL.path
        let file = "\(directory)/serial-EUR.json"
        let files = CalibrationFiles(source: "serial")
        func record(_ staged: StagedCalibration, seq: Int64) throws -> LedgerEvent {
            let detail = try JSONEncoder().encode(["file": staged.record.file, "sha256": staged.record.sha256])
            return LedgerEvent(seq: seq, time: 0, kind: "teach_commit", detail: String(decoding: detail, as: UTF8.self))
        }
        let first = try files.stage(TeachReport(session: Self.session(TeachSamples.samples(TeachSamples.fifty, count: 12, seed: 9), file: file), table: nil, minimumSamples: 10)).get()
        // Recorded as event 7; the daemon stopped before the rename.
        #expect(CalibrationFiles.recover([try record(first, seq: 7)]) == ["put in place \(file), recorded as event #7 before the daemon stopped"])
        #expect(try SHA256.hex([UInt8](Data(contentsOf: URL(fileURLWithPath: file)))) == first.record.sha256)
        #expect(!FileManager.default.fileExists(atPath: first.stagedPath))
        // Staged again, stopped before the record: the newest record is event 7's, so it goes.
        let second = try files.stage(TeachReport(session: Self.session(TeachSamples.samples(TeachSamples.euro, count: 12, seed: 10), code: "EUR_1", file: file),
                                                 table: nil, minimumSamples: 10)).get()
        #expect(CalibrationFiles.recover([try record(first, seq: 7)]) == ["removed \(second.stagedPath): staged, never recorded"])
        #expect(try SHA256.hex([UInt8](Data(contentsOf: URL(fileURLWithPath: file)))) == first.record.sha256)
        #expect(CalibrationFiles.recover([try record(first, seq: 7)]).isEmpty)
    }

    @Test("the link and file are found from the running chain; what cannot be taught is refused with what to do")
    func target() throws {
        let state = URL(fileURLWithPath: TestSupport.temporaryDirectory("state")).standardizedFileURL.path
        func chain(_ calibration: String) throws -> Chain {
            try TestSupport.chain([LinkSpec(plugin: "sanity"), LinkSpec(name: "eur", plugin: "coin-table", configJSON: #"{"currency":"EUR"\#(calibration)}"#)])
        }
        let good = try TeachTarget.resolve(currency: "eur", code: "EUR_1", chain: try chain(#","calibration":"\#(state)/calibration/front-EUR.json""#),
                                           source: "front", stateDirectory: state).get()
        #expect(good.link == "eur" && good.currency == "EUR" && good.file == "\(state)/calibration/front-EUR.json")
        #expect(good.table.window == 4 && good.table.denominations.count == 8)
        let outside = TeachTarget.resolve(currency: "EUR", code: "EUR_1", chain: try chain(#","calibration":"/etc/coinmech/eur.json""#),
                                          source: "front", stateDirectory: state)
        #expect(outside.failure?.message == "link 'eur' reads its calibration from /etc/coinmech/eur.json, outside the state directory \(state), "
            + "the only place teach mode writes: set `calibration: ${state_dir}/calibration/front-EUR.json` in its config, reload, then teach")
        #expect(TeachTarget.resolve(currency: "EUR", code: "EUR_1", chain: try chain(""), source: "a/b", stateDirectory: state).failure?.message
            == "link 'eur' reads no calibration file: add `calibration: ${state_dir}/calibration/a_b-EUR.json` to its config, reload, then teach")
    }
}

extension Result {
    var failure: Failure? {
        if case .failure(let failure) = self { return failure }
        return nil
    }
}
