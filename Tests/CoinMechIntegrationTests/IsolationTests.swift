import CoinMechChain
import CoinMechPluginABI
import CoinMechPlugins
@testable import CoinMechTestSupport
import Foundation
import Synchronization
import Testing

/// Isolated links: real `coinmech-plugin-host` processes of the build, real plugins, real crashes.
@Suite("Isolated links: a plugin in a host process of its own", .serialized)
struct IsolationTests {
    /// A builder for `directory`'s plugins whose isolated links quarantine after `crashes`.
    static func builder(_ directory: String = TestSupport.binDirectory, crashes: Int = 3, quarantine: QuarantineStore? = nil,
                        lines: LogLines? = nil) -> ChainBuilder {
        let sink: PluginLogSink = { link, level, message in lines?.append("\(link) \(level): \(message)") }
        return ChainBuilder(loader: TestSupport.loader(directory: directory), environment: ChainEnvironment(
            quarantine: quarantine, log: sink, report: sink,
            isolation: IsolationSettings(maxCrashes: crashes, crashWindowSeconds: 600)))
    }

    static func isolated(_ name: String? = nil, _ plugin: String, _ config: String = "{}", budgetMs: Double = 1000) -> LinkSpec {
        LinkSpec(name: name, plugin: plugin, configJSON: config,
                 policy: LinkPolicy(isolation: .process, budgetNanoseconds: UInt64(budgetMs * 1e6)))
    }

    /// Whether a process is gone (reaped by its parent).
    static func gone(_ pid: pid_t) -> Bool { kill(pid, 0) != 0 && errno == ESRCH }

    @Test("an isolated link decides as the same plugin in process does, names itself, and its host exits with its chain")
    func sameDecisions() throws {
        let config = #"{"currency":"EUR"}"#
        var isolated: Chain? = try Self.builder().build(generation: 1, links: [Self.isolated("eur", "coin-table", config)])
        let inProcess = try TestSupport.chain([LinkSpec(name: "eur", plugin: "coin-table", configJSON: config)])
        let origin = try #require(isolated?.links[0].origin)
        #expect(origin.plugin == "coin-table" && origin.version == "2.2.0" && origin.license == "LicenseRef-CoinMech")
        #expect(origin.description == inProcess.links[0].origin.description)
        var generator = SystemRandomNumberGenerator()
        for seq in 1...300 {
            let reading = Reading.coin(Double.random(in: 15...30, using: &generator), Double.random(in: 2...10, using: &generator), seq: UInt64(seq))
            let (a, b) = (isolated!.decide(reading), inProcess.decide(reading))
            #expect(a.verdict == b.verdict && a.linkName == b.linkName, "\(reading)")
        }
        let pid = try #require((isolated?.links[0].validator as? IsolatedValidator)?.hostPID)
        #expect(!Self.gone(pid))
        isolated = nil
        // Its supervisor closes the channel; the host destroys the instance, exits and is reaped.
        try TestSupport.waitUntil("the plugin host to exit", timeout: 10) { Self.gone(pid) }
    }

    @Test("a plugin host holds its channel and nothing else, may gain no privileges, and runs as the configured user",
          .enabled(if: geteuid() == 0, "changing user needs root"))
    func sandboxed() throws {
        let spec = LinkSpec(name: "nobody-link", plugin: "sanity", configJSON: "{}",
                            policy: LinkPolicy(isolation: .process, budgetNanoseconds: 1_000_000_000, user: "nobody"))
        let chain = try Self.builder().build(generation: 1, links: [spec])
        let pid = try #require((chain.links[0].validator as? IsolatedValidator)?.hostPID)
        #expect(chain.decide(.coin(.nan, 5)).rejection?.reason == "not_finite")
        let status = try String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)
        let nobody = try #require(HostUser.named("nobody"))
        #expect(status.contains("\nUid:\t\(nobody.uid)\t\(nobody.uid)\t\(nobody.uid)\t\(nobody.uid)\n"), "\(status)")
        #expect(status.contains("\nNoNewPrivs:\t1\n"))
        // Descriptors: /dev/null, its output pipe twice, the channel, and the sealed copy of the plugin it was handed.
        let fds = try FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd").compactMap(Int32.init).sorted()
        #expect(fds == [0, 1, 2, 3, 4], "\(fds)")
        let targets = fds.map { (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/\($0)")) ?? "?" }
        #expect(targets[0] == "/dev/null" && targets[1].hasPrefix("pipe:") && targets[3].hasPrefix("socket:") && targets[4].hasPrefix("/memfd:coinmech-plugin-nobody-link"), "\(targets)")
    }

    @Test("a host that segfaults costs the reading in flight (plugin_crashed, named), restarts, and is quarantined at the limit")
    func crashThenQuarantine() throws {
        let dir = TestSupport.temporaryDirectory("isolated-crash")
        _ = try TestSupport.compileFixture("misbehaving", into: dir, as: "libmisbehaving.so")
        let store = QuarantineStore(stateDirectory: dir)
        let lines = LogLines()
        let chain = try Self.builder(dir, crashes: 2, quarantine: store, lines: lines)
            .build(generation: 1, links: [Self.isolated("third-party", "misbehaving", #"{"mode":"segv","at":5}"#)])
        let link = chain.links[0]
        for seq in 1...4 { #expect(chain.decide(.coin(24.26, 5.67, seq: UInt64(seq))).linkName == Chain.terminalLinkName) }
        let fifth = chain.decide(.coin(24.26, 5.67, seq: 5))
        #expect(fifth.linkName == "third-party")
        #expect(fifth.rejection?.reason == "plugin_crashed")
        #expect(fifth.rejection?.message == "link 'third-party' crashed: its plugin host died during the call; coin returned")
        // Until the host is back, readings are returned as unavailable; then it decides again.
        try TestSupport.waitUntil("the crash to be reaped", timeout: 10) { link.health.current != .ok }
        #expect(chain.decide(.coin(24.26, 5.67, seq: 6)).rejection?.reason == "plugin_unavailable")
        try TestSupport.waitUntil("the host to be started again", timeout: 10) { link.health.current == .ok }
        #expect(lines.all.contains { $0.contains("third-party warning: its plugin host died during the call (killed by SIGSEGV); starting it again in 100 ms") })
        // A new instance: it counts its calls from one again, and crashes on its fifth.
        for seq in 7...10 { #expect(chain.decide(.coin(24.26, 5.67, seq: UInt64(seq))).linkName == Chain.terminalLinkName) }
        #expect(chain.decide(.coin(24.26, 5.67, seq: 11)).rejection?.reason == "plugin_crashed")
        try TestSupport.waitUntil("the second crash to quarantine the link", timeout: 10) { link.health.current == .quarantined }
        let problem = try #require(link.health.problem)
        #expect(problem.cause == "crashes")
        #expect(problem.reason.hasPrefix("crashed 2 times within 600 s (last: its plugin host died during the call (killed by SIGSEGV))"))
        // The chain no longer calls it, and the quarantine is on disk for the next start.
        #expect(chain.decide(.coin(24.26, 5.67, seq: 12)).rejection?.reason == "quarantined")
        #expect(QuarantineStore(stateDirectory: dir).record(for: "third-party")?.problem.state == .quarantined)
    }

    @Test("an isolated link over its budget has its host killed and the reading returned as plugin_hung")
    func overBudget() throws {
        let dir = TestSupport.temporaryDirectory("isolated-slow")
        _ = try TestSupport.compileFixture("misbehaving", into: dir, as: "libmisbehaving.so")
        let chain = try Self.builder(dir).build(generation: 1, links: [Self.isolated("slow", "misbehaving", #"{"mode":"sleep","ms":2000}"#, budgetMs: 20)])
        let pid = try #require((chain.links[0].validator as? IsolatedValidator)?.hostPID)
        let decision = chain.decide(.coin(24.26, 5.67))
        #expect(decision.rejection == Rejection(reason: "plugin_hung", message: "link 'slow' took longer than its 20 ms budget: its plugin host was stopped; coin returned"))
        try TestSupport.waitUntil("the slow host to be killed and reaped", timeout: 10) { Self.gone(pid) }
    }

    @Test("a host that breaks the protocol is a crash too")
    func protocolError() throws {
        let dir = TestSupport.temporaryDirectory("isolated-scribble")
        _ = try TestSupport.compileFixture("misbehaving", into: dir, as: "libmisbehaving.so")
        let chain = try Self.builder(dir).build(generation: 1, links: [Self.isolated("scribbler", "misbehaving", #"{"mode":"scribble"}"#)])
        let decision = chain.decide(.coin(24.26, 5.67))
        #expect(decision.rejection?.reason == "plugin_crashed")
        #expect(decision.rejection?.message.contains("broke the protocol") == true)
    }

    @Test("load and create errors come back from the host as they would in process; a crash in create fails the build")
    func startErrors() throws {
        #expect(throws: ChainBuildError(position: 1, link: "cent", cause: .plugin(.createFailed(
            path: "\(TestSupport.binDirectory)/libcoin.so", plugin: "coin", message: "missing key 'weight_g'")))) {
            try Self.builder().build(generation: 1, links: [Self.isolated("cent", "coin", #"{"currency":"USD","code":"cent","value":1,"diameter_mm":19.05}"#)])
        }
        let dir = TestSupport.temporaryDirectory("isolated-create")
        _ = try TestSupport.compileFixture("misbehaving", into: dir, as: "libmisbehaving.so")
        do throws(ChainBuildError) {
            _ = try Self.builder(dir).build(generation: 1, links: [Self.isolated("boom", "misbehaving", #"{"mode":"crash_create"}"#)])
            Issue.record("a host that crashes in create must fail the build")
        } catch {
            #expect(error.description.contains("the plugin host crashed: killed by SIGSEGV while loading the plugin or creating the instance"))
        }
        let v1 = try TestSupport.compileFixture("abi_mismatch", into: dir, as: "libold.so", defines: ["FOUND=1u"])
        #expect(throws: ChainBuildError(position: 1, link: "old", cause: .plugin(.abiMismatch(path: v1, found: 1, expected: PluginABI.hostVersion)))) {
            try Self.builder(dir).build(generation: 1, links: [Self.isolated("old", "old")])
        }
    }

    @Test("a plugin's log lines reach the daemon's sink under the link's name, rate-limited")
    func logForwarded() throws {
        let dir = TestSupport.temporaryDirectory("isolated-log")
        _ = try TestSupport.compileFixture("misbehaving", into: dir, as: "libmisbehaving.so")
        let lines = LogLines()
        let chain = try Self.builder(dir, lines: lines).build(generation: 1, links: [Self.isolated("chatty", "misbehaving", #"{"mode":"log"}"#)])
        for seq in 1...50 { _ = chain.decide(.coin(24.26, 5.67, seq: UInt64(seq))) }
        let logged = lines.all.filter { $0.hasPrefix("chatty warning: call ") }
        #expect(logged.first == "chatty warning: call 1")
        // A burst of 20, then about 5 a second: far fewer than 50.
        #expect(logged.count >= 20 && logged.count < 30, "\(logged.count) lines")
    }
}
