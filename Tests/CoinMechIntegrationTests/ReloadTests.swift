import CoinMechHarness
import CoinMechChain
import CoinMechClient
import CoinMechLedger
import CoinMechPlugins
import CoinMechProtocol
@testable import CoinMechTestSupport
import Foundation
import Testing

@Suite("Hot reload of the chain", .serialized)
struct ReloadTests {
    /// A daemon whose plugin directory holds `libmarginal.so` (v1: ±5 %, v2: ±1 %), fed quarters
    /// measured up to ~4 % off, so the two versions disagree on many coins.
    struct Rig {
        let harness: DaemonHarness
        let plugins: String
        let builds: String

        init(rate: Double = 20, environment: [String: String] = [:]) throws {
            plugins = TestSupport.temporaryDirectory("plugins")
            builds = TestSupport.temporaryDirectory("builds")
            _ = try TestSupport.compileFixture("marginal", into: builds, as: "v1.so", defines: ["TOLERANCE=0.05"])
            _ = try TestSupport.compileFixture("marginal", into: builds, as: "v2.so", defines: ["TOLERANCE=0.01"])
            // In process: these tests are about swapping chains; isolated links reload in IsolationEndToEndTests.
            harness = try DaemonHarness(chain: "chain:\n  - {plugin: marginal, isolation: in-process}\n", extra: "plugin_dir: \(plugins)",
                                        source: "{kind: serial, device: mech, baud: 9600, currencies: [USD]}")
            try deploy("v1.so")
            // 20 coins/s need a faster line than 9600 baud (a reading and a confirmation take 55 ms there).
            try harness.startSimulator("coins: 0\nrate_per_s: \(rate)\nseed: 12\nmix: {quarter: 1}\nnoise: {diameter: 0.015, weight: 0.015}\nbaud: 115200\n")
            try harness.startDaemon(pluginDirectory: nil, environment: environment)
            _ = try harness.socketWhenUp()
        }

        /// Deploys a build as the plugin the way docs/PLUGINS.md says: copy beside it, then rename.
        func deploy(_ build: String) throws {
            let staging = "\(plugins)/.libmarginal.so.new"
            try? FileManager.default.removeItem(atPath: staging)
            try FileManager.default.copyItem(atPath: "\(builds)/\(build)", toPath: staging)
            chmod(staging, 0o644)
            guard rename(staging, "\(plugins)/libmarginal.so") == 0 else { throw ClientError.closed }
        }

        /// Renames `builds` into place one after another, all copied first: a burst of
        /// microseconds, however slowly this test runs (copied between the renames, a loaded
        /// machine could spread them past the debounce's 300 ms).
        func deployBurst(_ builds: [String]) throws {
            let staged = try builds.enumerated().map { index, build in
                let staging = "\(plugins)/.libmarginal.so.new\(index)"
                try? FileManager.default.removeItem(atPath: staging)
                try FileManager.default.copyItem(atPath: "\(self.builds)/\(build)", toPath: staging)
                chmod(staging, 0o644)
                return staging
            }
            for staging in staged {
                guard rename(staging, "\(plugins)/libmarginal.so") == 0 else { throw ClientError.closed }
            }
        }

        func deployGarbage() throws {
            try "this is not a shared object".write(toFile: "\(plugins)/.libmarginal.so.new", atomically: false, encoding: .utf8)
            chmod("\(plugins)/.libmarginal.so.new", 0o644)
            rename("\(plugins)/.libmarginal.so.new", "\(plugins)/libmarginal.so")
        }
    }

    @Test("200 reloads alternating two versions while coins flow: every reading decided once, by its generation, none credited late")
    func storm() throws {
        let rig = try Rig()
        let client = try CoinMechConnection(path: rig.harness.socket)
        var failures = 0
        for round in 1...200 {
            if round == 100 {
                // A broken plugin dropped in mid-storm is refused; the old chain keeps deciding.
                try rig.deployGarbage()
                do {
                    try client.request("reload")
                    Issue.record("a garbage plugin was loaded")
                } catch {
                    failures += 1
                    #expect("\(error)".contains("not a shared object"))
                }
                #expect(try client.request("status")["ledger"] == "ok")
            }
            try rig.deploy(round % 2 == 0 ? "v2.so" : "v1.so")
            let result = try client.request("reload")
            #expect(result["generation"]?.int != nil)
            // Coins between reloads: wait for the next reading rather than for time.
            let readings = try client.request("status")["counters"]!["readings"]!.int!
            try TestSupport.waitUntil("a reading after reload \(round)", timeout: 10) {
                try client.request("status")["counters"]!["readings"]!.int! > readings
            }
        }
        let truth = try rig.harness.stopSimulatorAndReadTruth()
        _ = try rig.harness.stopDaemon()

        // How fast reloads are, and what they cost the deciding path, is `coinmech-bench reload`'s
        // to say. Here: every coin decided once, by the generation that was current, and the money
        // right (a coin decided too late for the mech is never credited).
        let audit = try rig.harness.audit()
        #expect(audit.isClean, "\(audit.problems)")
        let events = try rig.harness.ledger().events(since: 0, limit: 1_000_000)
        let decisions = events.filter { $0.kind == "decision" }
        #expect(decisions.count == truth.sent.readings)  // each reading decided exactly once
        #expect(Set(decisions.map { "\($0.epoch!)/\($0.deviceSeq!)" }).count == decisions.count)
        #expect(DaemonHarness.disagreements(decisions, truth).isEmpty, "\(DaemonHarness.disagreements(decisions, truth))")

        // Which version each generation ran, from the reload records (and the startup's v1).
        var version: [Int64: String] = [:]
        for event in events where event.kind == "reload" || event.kind == "startup" {
            guard let detail = event.detail.flatMap(JSON.parse) else { continue }
            let generation = (detail["generation"] ?? detail["chain_generation"])?.string.flatMap { Int64($0) }
            let links = detail["links"]?.string ?? ""
            if let generation { version[generation] = links.contains("tolerance-0.01") ? "v2" : "v1" }
        }
        #expect(events.filter { $0.kind == "reload_failed" }.count >= failures)
        #expect(Set(version.values) == ["v1", "v2"])
        var disagreements = 0, lastGeneration: Int64 = 0
        for decision in decisions {
            let generation = try #require(decision.chainGeneration)
            #expect(generation >= lastGeneration, "generations never go back")
            lastGeneration = generation
            let tolerance = version[generation] == "v2" ? 0.01 : 0.05
            let inside = abs(decision.diameterMM! - 24.26) <= 24.26 * tolerance && abs(decision.weightG! - 5.67) <= 5.67 * tolerance
            // An accept withdrawn because it came too late for the mech was still the chain's accept.
            let chainAccepted = decision.verdict == "accept" || decision.reason == "deadline_passed"
            #expect(chainAccepted == inside, "decision #\(decision.seq) by generation \(generation)")
            let otherInside = abs(decision.diameterMM! - 24.26) <= 24.26 * (0.06 - tolerance) && abs(decision.weightG! - 5.67) <= 5.67 * (0.06 - tolerance)
            if inside != otherInside { disagreements += 1 }
        }
        #expect(Set(decisions.compactMap(\.chainGeneration)).count > 20)
        #expect(disagreements > 10, "the two versions must really disagree on coins that were seen")
    }

    @Test("SIGHUP reloads")
    func sighup() throws {
        let rig = try Rig(rate: 5)
        let client = try CoinMechConnection(path: rig.harness.socket)
        let before = try client.request("status")["chain_generation"]!.int!
        rig.harness.daemon!.signal(SIGHUP)
        try TestSupport.waitUntil("the SIGHUP's reload") { try client.request("status")["chain_generation"]!.int! != before }
        #expect(try client.request("status")["chain_generation"]!.int! == before + 1)
        #expect(rig.harness.daemon!.isRunning)
        _ = try rig.harness.stopDaemon()
        #expect(rig.harness.daemonLog.contains("reloading the chain reason=SIGHUP"))
    }

    @Test("a plugin deployed while the daemon starts is picked up: the watch exists before the socket")
    func deployDuringStartup() throws {
        // The daemon stalls 2 s with its socket bound and its chain built from v1, before its
        // services start: a client can connect, and an operator can deploy, in that window.
        let rig = try Rig(rate: 5, environment: ["COINMECH_FAILPOINTS": "listening=sleep:2000"])
        try rig.deploy("v2.so")
        let client = try CoinMechConnection(path: rig.harness.socket)
        try TestSupport.waitUntil("the reload of the plugin deployed during start-up") {
            try client.request("chain")["links"]?.array?.first?["version"] == "tolerance-0.01"
        }
        _ = try rig.harness.stopDaemon()
        #expect(rig.harness.daemonLog.contains("reloading the chain reason=files changed"))
    }

    @Test("a plugin renamed into the directory is picked up by inotify, once after a burst")
    func inotify() throws {
        let rig = try Rig(rate: 5)
        let client = try CoinMechConnection(path: rig.harness.socket)
        let before = try client.request("status")["chain_generation"]!.int!
        try rig.deployBurst(["v2.so", "v1.so", "v2.so"])  // one reload after it settles
        try TestSupport.waitUntil("the burst's reload") { try client.request("status")["chain_generation"]!.int! != before }
        // A second reload would come within the debounce's longest wait (4 × 300 ms): watch
        // that long for one (the absence of an event takes time to see).
        usleep(1_500_000)
        #expect(try client.request("status")["chain_generation"]!.int! == before + 1)
        let chain = try client.request("chain")
        #expect(chain["links"]?.array?.first?["version"] == "tolerance-0.01")
        _ = try rig.harness.stopDaemon()
    }

    @Test("reload by socket waits for the outcome; coinctl prints it")
    func coinctlReload() throws {
        let rig = try Rig(rate: 5)
        let ok = try ChildProcess("coinctl", ["reload", "--socket", rig.harness.socket])
        #expect(ok.wait() == 0)
        #expect(String(decoding: ok.readToEnd(), as: UTF8.self).hasPrefix("reloaded: chain generation"))
        try rig.deployGarbage()
        let bad = try ChildProcess("coinctl", ["reload", "--socket", rig.harness.socket])
        #expect(bad.wait() == 1)
        #expect(bad.stderr.contains("keeps deciding"))
        _ = try rig.harness.stopDaemon()
    }
}

@Suite("Plugin images: C images unload, Swift images stay")
struct PluginUnloadTests {
    @Test("a plain C plugin is unloaded once no chain refers to it")
    func cUnloads() throws {
        let dir = TestSupport.temporaryDirectory("unload")
        _ = try TestSupport.compileFixture("marginal", into: dir, as: "libmarginal.so")
        let loader = TestSupport.loader(directory: dir)
        var chain: Chain? = try ChainBuilder(loader: loader).build(generation: 1, links: [LinkSpec(plugin: "marginal")])
        let copy = try #require(chain?.links.first.map { ($0.validator as! PluginInstance).image.loadedPath })
        #expect((chain!.links.first!.validator as! PluginInstance).image.unloadable)
        #expect(dlopen(copy, RTLD_NOW | RTLD_NOLOAD).map { dlclose($0) } != nil)  // loaded now
        chain = nil
        #expect(dlopen(copy, RTLD_NOW | RTLD_NOLOAD) == nil)  // gone
    }

    @Test("a Swift plugin is never unloaded")
    func swiftStays() throws {
        let loader = TestSupport.loader()
        var chain: Chain? = try ChainBuilder(loader: loader).build(generation: 1, links: [LinkSpec(plugin: "sanity")])
        let copy = try #require(chain?.links.first.map { ($0.validator as! PluginInstance).image.loadedPath })
        #expect(!(chain!.links.first!.validator as! PluginInstance).image.unloadable)
        chain = nil
        let handle = dlopen(copy, RTLD_NOW | RTLD_NOLOAD)
        #expect(handle != nil)
        if let handle { dlclose(handle) }
    }
}
