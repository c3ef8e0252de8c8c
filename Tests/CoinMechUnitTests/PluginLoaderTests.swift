import CoinFacts
import CoinMechChain
import CoinMechPluginABI
import CoinMechPlugins
@testable import CoinMechTestSupport
import Foundation
import Testing

@Suite("Plugin loader: real dlopen of the plugins the build produced")
struct PluginLoaderTests {
    @Test("every shipped plugin loads and describes itself: name, version, license, summary, reading kinds",
          arguments: ["coin", "coin-table", "sanity", "repeat-guard", "weight-floor", "channel-map", "coin-id"])
    func shippedPluginsLoad(name: String) throws {
        let image = try TestSupport.loader().load(plugin: name)
        #expect(image.name == name)
        // 2.x: built for plugin ABI 2 (coin-table 2.1: noise-aware matching came in 1.1).
        #expect(image.version == (name == "coin-table" ? "2.2.0" : "2.0.0"))
        #expect(image.sha256.count == 64)
        #expect(image.metadata.abiVersion == COINMECH_PLUGIN_ABI_VERSION)
        #expect(image.metadata.license == "LicenseRef-CoinMech")
        #expect(image.metadata.summary.count > 20)
        // Coin ids from acceptors for coin-id; measured readings for the others, coin-table judging their alloy axis too.
        let kinds = name == "coin-id" ? UInt32(COINMECH_KINDS_COIN_ID) : name == "coin-table" ? COINMECH_KINDS_MEASURED | COINMECH_KINDS_ALLOY : COINMECH_KINDS_MEASURED
        #expect(image.metadata.readingKinds == kinds)
        #expect(image.metadata.concurrentInstances)
        #expect(ShippedPlugins.names.contains(name))
    }

    @Test("each version is loaded from a private content-addressed copy")
    func contentAddressedCopy() throws {
        let loader = TestSupport.loader()
        let image = try loader.load(plugin: "sanity")
        let expected = try TestSupport.run(["sha256sum", image.sourcePath]).output.split(separator: " ")[0]
        #expect(image.sha256 == expected)
        #expect(image.loadedPath == "\(loader.runtimeDirectory)/plugins/libsanity-\(expected).so")
        let attributes = try FileManager.default.attributesOfItem(atPath: "\(loader.runtimeDirectory)/plugins")
        #expect((attributes[.posixPermissions] as? Int) == 0o700)
    }

    @Test("pruning removes copies of versions no longer in use and half-written copies, nothing else")
    func pruneCopies() throws {
        let builds = TestSupport.temporaryDirectory("versions")
        let loader = TestSupport.loader(directory: builds)
        _ = try TestSupport.compileFixture("marginal", into: builds, as: "libmarginal.so", defines: ["TOLERANCE=0.05"])
        let old = try loader.load(plugin: "marginal")
        _ = try TestSupport.compileFixture("marginal", into: builds, as: "libmarginal.so", defines: ["TOLERANCE=0.01"])
        let current = try loader.load(plugin: "marginal")
        #expect(old.sha256 != current.sha256)
        let copies = "\(loader.runtimeDirectory)/plugins"
        try "x".write(toFile: "\(copies)/libmarginal-\(current.sha256).so.tmp.4242", atomically: false, encoding: .utf8)
        try "x".write(toFile: "\(copies)/notes.txt", atomically: false, encoding: .utf8)
        try "x".write(toFile: "\(copies)/libhand-made.so", atomically: false, encoding: .utf8)

        let removed = loader.pruneCopies(keeping: [current.sha256])
        #expect(removed == ["libmarginal-\(current.sha256).so.tmp.4242", "libmarginal-\(old.sha256).so"])
        let left = try FileManager.default.contentsOfDirectory(atPath: copies).sorted()
        #expect(left == ["libhand-made.so", "libmarginal-\(current.sha256).so", "notes.txt"])
        // The version in use still loads from its copy.
        #expect(try loader.load(plugin: "marginal").loadedPath == current.loadedPath)
    }

    @Test("a plugin of ABI 1, of a newer minor or of another major is refused before it is called, both versions named")
    func abiMismatch() throws {
        let dir = TestSupport.temporaryDirectory("abi")
        // ABI 1: this host does not load it (the major changed), and says how to port it.
        let v1 = try TestSupport.compileFixture("abi_mismatch", into: dir, as: "v1.so", defines: ["FOUND=1u"])
        #expect(throws: PluginLoadError.abiMismatch(path: v1, found: 1, expected: PluginABI.hostVersion)) { try TestSupport.loader(directory: dir).load(path: v1) }
        #expect(PluginLoadError.abiMismatch(path: v1, found: 1, expected: 0x2_0000).description
            == "\(v1): plugin built for plugin ABI 1; this coinmechd speaks ABI 2.0: rebuild it against this coinmech_plugin.h (docs/PLUGINS.md, 'Porting a plugin from ABI 1')")
        // 2.7: the right major, but it may rely on what this host does not know.
        let newer = try TestSupport.compileFixture("abi_mismatch", into: dir, as: "newer.so", defines: ["FOUND=0x20007u"])
        #expect(throws: PluginLoadError.newerMinor(path: newer, found: 0x2_0007, host: PluginABI.hostVersion)) { try TestSupport.loader(directory: dir).load(path: newer) }
        #expect(PluginLoadError.newerMinor(path: newer, found: 0x2_0007, host: 0x2_0000).description
            == "\(newer): plugin needs plugin ABI 2.7; this coinmechd speaks ABI 2.0, an older minor: upgrade coinmechd, or rebuild the plugin against this coinmech_plugin.h")
        let v3 = try TestSupport.compileFixture("abi_mismatch", into: dir, as: "v3.so", defines: ["FOUND=0x30000u"])
        #expect(throws: PluginLoadError.abiMismatch(path: v3, found: 0x3_0000, expected: PluginABI.hostVersion)) { try TestSupport.loader(directory: dir).load(path: v3) }
        #expect(PluginLoadError.abiMismatch(path: v3, found: 0x3_0000, expected: 0x2_0000).description.contains("plugin built for plugin ABI 3.0; this coinmechd speaks ABI 2.0: upgrade coinmechd"))
    }

    @Test("a shared object without the entry symbol is refused")
    func missingEntrySymbol() throws {
        let dir = TestSupport.temporaryDirectory("noentry")
        let path = try TestSupport.compileFixture("no_entry", into: dir)
        #expect(throws: PluginLoadError.missingEntrySymbol(path: path)) {
            try TestSupport.loader(directory: dir).load(path: path)
        }
    }

    @Test("a file that is not ELF is refused before dlopen")
    func notELF() throws {
        let dir = TestSupport.temporaryDirectory("notelf")
        let path = "\(dir)/libtext.so"
        try "#!/bin/sh\necho not a plugin\n".write(toFile: path, atomically: true, encoding: .utf8)
        #expect(throws: PluginLoadError.notSharedObject(path: path)) {
            try TestSupport.loader(directory: dir).load(plugin: "text")
        }
    }

    @Test("a missing plugin names the paths tried")
    func notFound() throws {
        let loader = TestSupport.loader()
        #expect(throws: PluginLoadError.notFound(
            name: "nope", tried: ["\(loader.directory)/libnope.so", "\(loader.directory)/nope.so"])) {
            try loader.load(plugin: "nope")
        }
    }

    @Test("a failing create reports the plugin's own message")
    func createFails() throws {
        let image = try TestSupport.loader().load(plugin: "coin")
        do {
            _ = try image.instantiate(configJSON: #"{"currency":"USD","code":"cent","value":1,"diameter_mm":19.05}"#)
            Issue.record("create should have failed")
        } catch {
            #expect(error == .createFailed(path: image.sourcePath, plugin: "coin", message: "missing key 'weight_g'"))
        }
        #expect(throws: PluginLoadError.createFailed(
            path: image.sourcePath, plugin: "coin",
            message: "unknown key 'tolerence' (known: code, currency, diameter_mm, diameter_tolerance, thickness_mm, thickness_tolerance, tolerance, value, weight_g, weight_tolerance)")) {
            try image.instantiate(configJSON: #"{"currency":"USD","code":"cent","value":1,"diameter_mm":19.05,"weight_g":2.5,"tolerence":0.1}"#)
        }
        #expect(throws: PluginLoadError.createFailed(path: image.sourcePath, plugin: "coin", message: "key 'value' must be a number")) {
            try image.instantiate(configJSON: #"{"currency":"USD","code":"cent","value":"one","diameter_mm":19.05,"weight_g":2.5}"#)
        }
    }

    @Test("the C plugin's create failure is reported too")
    func cCreateFails() throws {
        let image = try TestSupport.loader().load(plugin: "weight-floor")
        #expect(throws: PluginLoadError.createFailed(
            path: image.sourcePath, plugin: "weight-floor", message: "key 'min_weight_g' must be a number between 0 and 100")) {
            try image.instantiate(configJSON: #"{"min_weight_g": -1}"#)
        }
    }

    @Test("a world-writable plugin file is refused")
    func worldWritableFile() throws {
        let dir = TestSupport.temporaryDirectory("perm")
        let path = try TestSupport.copyBuiltPlugin("sanity", into: dir)
        chmod(path, 0o666)
        #expect(throws: PluginLoadError.unsafePermissions(path: path, reason: "file is writable by group or others (mode 666)")) {
            try TestSupport.loader(directory: dir).load(plugin: "sanity")
        }
    }

    @Test("a plugin in a world-writable directory is refused")
    func worldWritableDirectory() throws {
        let dir = TestSupport.temporaryDirectory("permdir")
        let path = try TestSupport.copyBuiltPlugin("sanity", into: dir)
        chmod(path, 0o644)
        chmod(dir, 0o777)
        #expect(throws: PluginLoadError.unsafePermissions(
            path: path, reason: "directory \(dir) is writable by group or others (mode 777)")) {
            try TestSupport.loader(directory: dir).load(plugin: "sanity")
        }
    }

    @Test("a plugin owned by an untrusted user is refused")
    func untrustedOwner() throws {
        let dir = TestSupport.temporaryDirectory("owner")
        let path = try TestSupport.copyBuiltPlugin("sanity", into: dir)
        let loader = PluginLoader(directory: dir, runtimeDirectory: TestSupport.temporaryDirectory("rt"), trustedOwners: [4242])
        #expect(throws: PluginLoadError.unsafePermissions(
            path: path, reason: "file is owned by uid \(geteuid()), not by root or the daemon's user")) {
            try loader.load(plugin: "sanity")
        }
    }
}

@Suite("The plugin examples of docs/PLUGINS.md")
struct PluginExampleTests {
    @Test("the minimal C plugin compiles with cc, loads and accepts a quarter")
    func minimalC() throws {
        let dir = TestSupport.temporaryDirectory("example-c")
        let cc = try TestSupport.run([
            "cc", "-shared", "-fPIC", "-I\(TestSupport.packageRoot)/Sources/CoinMechPluginABI/include",
            "\(TestSupport.packageRoot)/examples/plugins/minimal-c/minimal.c", "-o", "\(dir)/libminimal.so", "-lm",
        ])
        try #require(cc.status == 0, "\(cc.errors)")
        let lines = LogLines()
        let environment = ChainEnvironment(log: { link, level, message in lines.append("\(link) \(level): \(message)") })
        let chain = try ChainBuilder(loader: TestSupport.loader(directory: dir), environment: environment)
            .build(generation: 1, links: [LinkSpec(name: "quarters", plugin: "minimal")])
        #expect(chain.decide(.coin(24.3, 5.6)).denomination == Denomination(currency: "USD", code: "quarter", valueMinor: 25))
        #expect(chain.decide(.coin(19.05, 2.5)).rejection?.reason == "unrecognized")
        // Its create() logged through the host, under the link's name.
        #expect(lines.all == ["quarters info: quarter window ±5.0 %"])
        #expect(chain.links[0].origin.license == "MIT-0")
        #expect(chain.links[0].origin.summary == "accepts a US quarter inside a window of its diameter and weight")
    }

    @Test("the minimal Swift plugin loads and rejects heavy coins")
    func minimalSwift() throws {
        let chain = try TestSupport.chain([LinkSpec(plugin: "example-minimal-swift", configJSON: #"{"max_weight_g": 10}"#)])
        #expect(chain.links[0].origin.plugin == "heavy-guard")
        #expect(chain.decide(.coin(30, 12)).rejection?.reason == "too_heavy")
        #expect(chain.decide(.coin(24, 5)).rejection?.reason == "unrecognized")
    }
}
