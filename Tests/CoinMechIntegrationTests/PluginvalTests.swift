import CoinMechHarness
@testable import CoinMechTestSupport
import Foundation
import Testing

/// `coinmech-pluginval` against the shipped plugins, the C example and plugins that misbehave
/// on purpose: real child processes, real crashes and hangs.
@Suite("coinmech-pluginval: a conformance checker for plugins", .serialized)
struct PluginvalTests {
    /// Runs the validator; returns its exit status and its JSON report.
    static func validate(_ plugin: String, config: String? = nil, _ arguments: [String] = []) throws -> (Int32?, [String: Any]) {
        var all = [plugin, "--json"] + arguments
        if let config {
            let file = "\(TestSupport.temporaryDirectory("pluginval"))/config.json"
            try config.write(toFile: file, atomically: true, encoding: .utf8)
            all += ["--config", file]
        }
        let run = try ChildProcess("coinmech-pluginval", all)
        let output = run.readToEnd()
        let status = run.wait(timeout: 120)
        let report = try #require(try JSONSerialization.jsonObject(with: output) as? [String: Any], "no JSON report: \(run.stderr)")
        return (status, report)
    }

    static func result(_ report: [String: Any], _ check: String) -> [String: Any]? {
        (report["results"] as? [[String: Any]])?.first { $0["check"] as? String == check }
    }

    static func findings(_ report: [String: Any], _ check: String) -> [String] { result(report, check)?["findings"] as? [String] ?? [] }

    static func misbehaving() throws -> String {
        try TestSupport.compileFixture("misbehaving", into: TestSupport.temporaryDirectory("pluginval-fixture"), as: "libmisbehaving.so")
    }

    @Test("a shipped plugin passes every check up to strictness 8 (allocations are checked on release builds: make pluginval)")
    func shippedPasses() throws {
        let (status, report) = try Self.validate("\(TestSupport.binDirectory)/libcoin-table.so", config: #"{"currency":"EUR"}"#, ["--strictness", "8"])
        #expect(status == 0, "\(report)")
        #expect(report["passed"] as? Bool == true)
        #expect((report["results"] as? [[String: Any]])?.count == 15)
        #expect(Self.result(report, "alloy")?["passed"] as? Bool == true)
    }

    @Test("the C example of docs/PLUGINS.md, built with cc as the page says, passes at the highest strictness")
    func cExamplePasses() throws {
        let dir = TestSupport.temporaryDirectory("pluginval-example")
        let cc = try ChildProcess("/usr/bin/cc", [
            "-shared", "-fPIC", "-O2", "-Wall", "-I\(TestSupport.packageRoot)/Sources/CoinMechPluginABI/include", "-fvisibility=hidden",
            "\(TestSupport.packageRoot)/examples/plugins/minimal-c/minimal.c", "-o", "\(dir)/libminimal.so", "-lm",
        ], absolute: true)
        #expect(cc.wait() == 0, "\(cc.stderr)")
        let (status, report) = try Self.validate("\(dir)/libminimal.so", ["--strictness", "10"])
        #expect(status == 0, "\(report)")
        #expect((report["results"] as? [[String: Any]])?.count == 16)
    }

    @Test("a plugin declaring the alloy axis that credits a coin of no metal or of impossible figures: findings of the alloy check")
    func alloyPromiseBroken() throws {
        let plugin = try TestSupport.compileFixture("alloy_liar", into: TestSupport.temporaryDirectory("pluginval-alloy"), as: "liballoy-liar.so")
        let (status, report) = try Self.validate(plugin, ["--strictness", "5"])
        #expect(status == 1)
        let findings = Self.findings(report, "alloy")
        for figures in ["no metal (a plastic token)", "a NaN conductivity", "a negative conductivity", "a conductivity beyond every metal", "an infinite permeability"] {
            #expect(findings.contains("accepted a nominal USD quarter with \(figures): a plugin that judges the alloy never credits that"), "\(findings)")
        }
    }

    @Test("a plugin declaring the alloy axis that reads it past an ABI 2.0 host's reading: a finding of the alloy check")
    func alloyReadPastAnOlderReading() throws {
        let plugin = try TestSupport.compileFixture("alloy_liar", into: TestSupport.temporaryDirectory("pluginval-alloy"), as: "liballoy-reads-past.so",
                                                    defines: ["READS_PAST"])
        let (status, report) = try Self.validate(plugin, ["--strictness", "5"])
        #expect(status == 1)
        let findings = Self.findings(report, "alloy")
        #expect(findings.contains { $0.contains("ABI 2.0 host's reading") }, "\(findings)")
    }

    @Test("a plugin that segfaults is a finding, not the end of the validator: the other checks still run")
    func crashIsAFinding() throws {
        let (status, report) = try Self.validate(try Self.misbehaving(), config: #"{"mode":"segv","at":1}"#, ["--strictness", "3"])
        #expect(status == 1)
        #expect(Self.findings(report, "edge").first?.hasPrefix("the plugin crashed the process (SIGSEGV) while: validate: edge reading 'no measurement at all'") == true)
        #expect(Self.result(report, "describe") != nil)
        #expect(Self.result(report, "metadata")?["passed"] as? Bool == true)
        // The fixture exports its test hooks besides the entry point.
        #expect(Self.findings(report, "elf").first?.hasPrefix("exports 3 symbols besides coinmech_plugin_entry") == true)
    }

    @Test("a plugin that hangs is stopped at the timeout and named with what it was doing")
    func hangIsAFinding() throws {
        let (status, report) = try Self.validate(try Self.misbehaving(), config: #"{"mode":"hang"}"#, ["--strictness", "1", "--timeout", "2"])
        #expect(status == 1)
        #expect(Self.findings(report, "edge") == ["did not finish within 2 s, while: validate: edge reading 'no measurement at all' (a hang)"])
    }

    @Test("nonsense verdicts, unbelievable accepts, leaks and randomness are findings", arguments: [
        ("bad_verdict", "edge", "edge reading 'no measurement at all': answered verdict 7, which is none of PASS, ACCEPT and REJECT"),
        ("fake_currency", "edge", "edge reading 'no measurement at all': accepted what the host will not credit (it returns the coin as plugin_error): currency 'ZZZ' is not an ISO 4217 code"),
        ("leak", "lifecycle", "the heap grew"),
        ("random", "determinism", "two fresh instances answered reading #"),
    ])
    func findings(mode: String, check: String, finding: String) throws {
        let (status, report) = try Self.validate(try Self.misbehaving(), config: "{\"mode\":\"\(mode)\"}", ["--strictness", "5", "--seed", "11"])
        #expect(status == 1)
        #expect(Self.findings(report, check).first?.hasPrefix(finding) == true, "\(Self.findings(report, check))")
    }

    @Test("a plugin that needs the network or files once loaded fails the sandbox check, saying why", arguments: [
        (#"{"tries":"tcp"}"#, "reading #1 in the sandbox: link 'pluginval' was stopped: its plugin made a system call its sandbox forbids (socket); coin returned"),
        (#"{"tries":"config","config":"/etc/hostname"}"#, "reading #1 of seed 5 was answered pass in process and reject"),
    ])
    func sandboxCheck(config: String, finding: String) throws {
        let plugin = try TestSupport.compileFixture("hostile", into: TestSupport.temporaryDirectory("pluginval-hostile"), as: "libhostile.so")
        let (status, report) = try Self.validate(plugin, config: config, ["--strictness", "4", "--seed", "5"])
        #expect(status == 1)
        #expect(Self.findings(report, "sandbox").first?.hasPrefix(finding) == true, "\(Self.findings(report, "sandbox"))")
        #expect(Self.result(report, "edge")?["passed"] as? Bool == true, "in process it is a well-formed plugin")
    }

    @Test("a plugin that escapes while it loads (its constructor, its entry, create) fails the sandbox check, naming the call", arguments: [
        ("constructor:fork", "{}", "clone"), ("entry:setown", "{}", "fcntl"), ("", #"{"create_tries":"tcp"}"#, "socket"),
    ])
    func sandboxCheckWhileLoading(early: String, config: String, call: String) throws {
        let plugin = try TestSupport.compileFixture("hostile", into: TestSupport.temporaryDirectory("pluginval-hostile-early"), as: "libhostile.so",
                                                    defines: early.isEmpty ? [] : ["HOSTILE_EARLY=\"\(early)\""])
        let (status, report) = try Self.validate(plugin, config: config, ["--strictness", "4", "--seed", "5"])
        #expect(status == 1)
        let findings = Self.findings(report, "sandbox")
        #expect(findings.first?.contains("the plugin made a system call its sandbox forbids (\(call))") == true, "\(findings)")
    }

    @Test("a failing random run names its seed, and the seed reproduces it")
    func seedReproduces() throws {
        let plugin = try Self.misbehaving()
        let (status, report) = try Self.validate(plugin, config: #"{"mode":"picky"}"#, ["--strictness", "6", "--seed", "3"])
        #expect(status == 1)
        let first = Self.findings(report, "random")
        #expect(first.last == "reproduce with --seed 3")
        #expect(first.first?.hasPrefix("random reading #") == true && first.first?.contains("of seed 3") == true)
        let (_, again) = try Self.validate(plugin, config: #"{"mode":"picky"}"#, ["--strictness", "6", "--seed", "3"])
        #expect(Self.findings(again, "random") == first)
    }
}
