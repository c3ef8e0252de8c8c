import AllocationCounter
import CLinux
import CoinFacts
import CoinMechChain
import CoinMechPluginABI
import CoinMechPlugins
import Foundation

/// The checks, each run in a child process of its own (a crash or a hang is a finding, not the
/// end of the validator), in order; a strictness runs every check at or below it. As in JUCE's
/// pluginval: 5 is the recommended minimum, random readings from 6, threads from 7,
/// allocations at 9.
enum Check: String, CaseIterable, Codable, Sendable {
    case load, abi, metadata, create, edge, elf, describe, sandbox, lifecycle, determinism, budget, alloy, random, concurrency, sizes, allocations

    var strictness: Int {
        switch self {
        case .load, .abi, .metadata, .create, .edge: 1
        case .elf: 2
        case .describe: 3
        case .sandbox: 4
        case .lifecycle, .determinism, .budget, .alloy: 5
        case .random: 6
        case .concurrency: 7
        case .sizes: 8
        case .allocations: 9
        }
    }

    var summary: String {
        switch self {
        case .load: "loads with dlopen(RTLD_NOW) from a private copy; the entry answers the handshake"
        case .abi: "the entry: same answer twice, nothing written past the host's struct, other majors refused"
        case .metadata: "name, version, license, summary, reading kinds and flags"
        case .create: "create and destroy with the configuration; bad configurations refused with a message inside the error buffer"
        case .edge: "edge readings (no measurement, zero, negative, huge, NaN, infinity, limits): well-formed verdicts, nothing written past the decision"
        case .elf: "exports only coinmech_plugin_entry; needs only libraries a CoinMech machine has"
        case .describe: "describe and explain: JSON objects, lengths and buffers as the host asks"
        case .sandbox: "loads and decides in a sandboxed plugin host as in process: no file, socket or process needed after load"
        case .lifecycle: "create and destroy repeated without heap or RSS growth"
        case .determinism: "the same readings give the same verdicts (two fresh instances)"
        case .budget: "p99 time of a validate call within the budget"
        case .alloy: "a plugin declaring the alloy axis: also measured readings, ABI 2.1; nothing past an older host's reading read; no metal and impossible figures never accepted"
        case .random: "random readings (seeded): always a well-formed verdict"
        case .concurrency: "create and destroy while another instance validates; concurrent instances if declared"
        case .sizes: "a newer host's larger reading and decision: same verdicts, nothing written into fields it cannot know"
        case .allocations: "validate allocates nothing once warm"
        }
    }
}

/// What a check reports.
struct CheckResult: Codable, Sendable {
    var check: Check
    var passed: Bool
    /// What is wrong (a failed check has at least one).
    var findings: [String]
    /// Figures and facts for the report.
    var notes: [String]
    var milliseconds: Double = 0
}

/// Everything a check needs, in its child process.
struct CheckRun {
    let plugin: PluginUnderTest
    let config: String
    let strictness: Int
    let seed: UInt64
    let budgetNanoseconds: UInt64
    /// Says what is about to happen, so a crash or a hang can be placed.
    let progress: (String) -> Void

    typealias Finding = PluginUnderTest.Finding

    /// Runs `check`; findings are collected, the first fatal one thrown.
    func run(_ check: Check) -> CheckResult {
        var result = CheckResult(check: check, passed: true, findings: [], notes: [])
        do throws(Finding) {
            switch check {
            case .load: result.notes = try load()
            case .abi: try abi(&result)
            case .metadata: try metadata(&result)
            case .create: try create(&result)
            case .edge: try edge(&result)
            case .elf: try elf(&result)
            case .describe: try describe(&result)
            case .sandbox: try sandbox(&result)
            case .lifecycle: try lifecycle(&result)
            case .determinism: try determinism(&result)
            case .budget: try budget(&result)
            case .alloy: try alloy(&result)
            case .random: try random(&result)
            case .concurrency: try concurrency(&result)
            case .sizes: try sizes(&result)
            case .allocations: try allocations(&result)
            }
        } catch {
            result.findings.append(error.description)
        }
        result.findings = Array(result.findings.prefix(12))
        result.passed = result.findings.isEmpty
        return result
    }

    var kinds: UInt32 { plugin.metadata.readingKinds }

    // MARK: ABI and metadata

    private func load() throws(Finding) -> [String] {
        let m = plugin.metadata
        return ["\(m.name) \(m.version) (\(m.license)), ABI \(PluginABI.text(m.abiVersion)), \(LinkOrigin(metadata: m, sha256: "", loadedAt: 0, description: nil).readingKindNames.joined(separator: " and ")) readings\(m.concurrentInstances ? ", concurrent instances" : "")"]
    }

    private func abi(_ result: inout CheckResult) throws(Finding) {
        let size = MemoryLayout<coinmech_plugin>.size
        progress("calling the entry with a host struct of 8 bytes")
        for (label, room) in [("8 bytes", 8), ("its own size", size), ("a newer host's, 64 bytes larger", size + 64)] {
            let buffer = UnsafeMutableRawPointer.allocate(byteCount: room + 64, alignment: 16)
            defer { buffer.deallocate() }
            buffer.initializeMemory(as: UInt8.self, repeating: 0, count: room)
            (buffer + room).initializeMemory(as: UInt8.self, repeating: 0xAB, count: 64)
            buffer.storeBytes(of: UInt32(room), toByteOffset: 4, as: UInt32.self)
            _ = plugin.entry(PluginABI.hostVersion, buffer.assumingMemoryBound(to: coinmech_plugin.self))
            let written = Int(buffer.load(fromByteOffset: 4, as: UInt32.self))
            if UnsafeRawBufferPointer(start: buffer + room, count: 64).contains(where: { $0 != 0xAB }) {
                result.findings.append("with a host struct of \(label) (\(room) bytes) the entry wrote past it")
            }
            if written > room { result.findings.append("with a host struct of \(label) it says it wrote \(written) bytes") }
            if room > size, UnsafeRawBufferPointer(start: buffer + max(written, size), count: room - max(written, size)).contains(where: { $0 != 0 }) {
                result.findings.append("with a newer host's larger struct it wrote past its own")
            }
        }
        progress("calling the entry for other major versions")
        for other: UInt32 in [1, 0x1_0000, 0x3_0000] {
            var api = coinmech_plugin()
            api.size = UInt32(size)
            if plugin.entry(other, &api) == 0 { result.findings.append("accepted a host of ABI \(PluginABI.text(other)): it must refuse another major") }
        }
        var again = coinmech_plugin()
        again.size = UInt32(size)
        _ = plugin.entry(PluginABI.hostVersion, &again)
        if again.abi_version != plugin.api.abi_version || again.reading_kinds != plugin.api.reading_kinds || again.flags != plugin.api.flags
            || again.name.map({ String(cString: $0) }) != plugin.metadata.name {
            result.findings.append("the entry answered differently the second time")
        }
        result.notes.append("version word 0x\(String(plugin.api.abi_version, radix: 16)), struct \(plugin.api.size) bytes")
    }

    private func metadata(_ result: inout CheckResult) throws(Finding) {
        let m = plugin.metadata
        let nameOK = !m.name.isEmpty && m.name.count <= 63 && m.name.utf8.allSatisfy { ($0 >= 0x61 && $0 <= 0x7A) || ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x2D }
        if !nameOK { result.findings.append("name '\(m.name)' is not 1 to 63 lowercase letters, digits and hyphens") }
        if m.version.isEmpty || m.version.count > 32 || !m.version.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) {
            result.findings.append("version '\(m.version)' is not 1 to 32 printable characters")
        } else if m.version.split(separator: ".").count < 2 {
            result.notes.append("version '\(m.version)' is not semantic (MAJOR.MINOR.PATCH)")
        }
        if plugin.api.license == nil || m.license.isEmpty { result.findings.append("no license (an SPDX identifier such as MIT, or LicenseRef-…)") }
        if !m.license.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F || $0 == 0x20 }) { result.findings.append("license '\(m.license)' is not an SPDX expression") }
        if plugin.api.description == nil || m.summary.isEmpty { result.findings.append("no description: one sentence for the operator (`coinctl chain` shows it)") }
        if m.summary.count > 200 { result.findings.append("description longer than 200 characters") }
        if plugin.api.reading_kinds & ~PluginABI.knownKinds != 0 {
            result.findings.append("declares reading kinds this ABI does not have (0x\(String(plugin.api.reading_kinds, radix: 16)))")
        }
        if m.flags & ~PluginABI.knownFlags != 0 { result.findings.append("sets flags this ABI does not have (0x\(String(m.flags, radix: 16)))") }
        result.notes.append("\(m.name) \(m.version), \(m.license): \(m.summary)")
    }

    // MARK: Instances

    private func create(_ result: inout CheckResult) throws(Finding) {
        progress("create with the configuration")
        let instance = try plugin.create(config)
        progress("destroy")
        plugin.destroy(instance)
        for (level, message) in plugin.log.all where message.isEmpty {
            result.findings.append("logged an empty \(level) line")
        }
        guard strictness >= 3 else { return }
        for bad in ["not json", "[]", "null", #"{"coinmech_pluginval_unknown_key": 1}"#, "{" + String(repeating: #""k":1,"#, count: 2000) + #""k":1}"#] {
            progress("create with a bad configuration: \(bad.prefix(40))")
            switch plugin.tryCreate(bad) {
            case .success(let instance):
                plugin.destroy(instance)
                if bad == #"{"coinmech_pluginval_unknown_key": 1}"# { result.notes.append("accepts unknown configuration keys (a typo then passes silently)") }
            case .failure(let message):
                if message.hasPrefix("wrote past") || message.hasPrefix("the error message") { result.findings.append("refusing '\(bad.prefix(40))': \(message)") }
                if message.isEmpty { result.findings.append("refused '\(bad.prefix(40))' without saying why") }
            }
        }
        for room in [1, 16] {
            progress("create with a bad configuration and \(room) bytes for the error")
            if case .failure(let message) = plugin.tryCreate("not json", errorRoom: room), message.hasPrefix("wrote past") || message.hasPrefix("the error") {
                result.findings.append("with \(room) bytes for the error: \(message)")
            }
        }
    }

    private func check(_ call: PluginUnderTest.Call, _ what: String, into result: inout CheckResult) {
        if call.wrotePastSize { result.findings.append("\(what): wrote past the decision's size") }
        if call.wroteUnknownFields { result.findings.append("\(what): wrote into fields past its own decision struct") }
        if let problem = VerdictRules.problem(call.decision) { result.findings.append("\(what): \(problem)") }
    }

    private func edge(_ result: inout CheckResult) throws(Finding) {
        let instance = try plugin.create(config)
        defer { plugin.destroy(instance) }
        let readings = TestReadings.edge(kinds: kinds)
        for (name, reading) in readings {
            progress("validate: edge reading '\(name)'")
            check(plugin.validate(instance, reading), "edge reading '\(name)'", into: &result)
        }
        result.notes.append("\(readings.count) edge readings")
    }

    private func elf(_ result: inout CheckResult) throws(Finding) {
        let file: ELFFile
        do {
            file = try ELFFile(path: plugin.path)
        } catch {
            throw Finding("\(error)")
        }
        let extra = file.superfluous
        if !extra.isEmpty {
            result.findings.append("exports \(extra.count) symbol\(extra.count == 1 ? "" : "s") besides coinmech_plugin_entry (\(extra.prefix(3).joined(separator: ", "))\(extra.count > 3 ? ", …" : "")): "
                + "export only the entry (C: -fvisibility=hidden and __attribute__((visibility(\"default\"))) on it; Swift: link with a version script, as plugins/exports.map); the Swift runtime needs none of them")
        }
        let unexpected = file.needed.filter { !ELFFile.isExpected($0) }
        if !unexpected.isEmpty {
            let message = "needs \(unexpected.joined(separator: ", ")), which a CoinMech machine need not have: install it with the plugin"
            if strictness >= 7 { result.findings.append(message) } else { result.notes.append(message) }
        }
        result.notes.append("exports: \(file.exported.filter { !ELFFile.linkerSymbols.contains($0) }.joined(separator: ", ")); needs: \(file.needed.joined(separator: ", "))")
    }

    private func describe(_ result: inout CheckResult) throws(Finding) {
        let instance = try plugin.create(config)
        defer { plugin.destroy(instance) }
        if let describe = plugin.api.describe {
            progress("describe")
            do throws(Finding) {
                let text = try plugin.text { describe(instance, $0, $1) }
                guard let object = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any] else {
                    throw Finding("is not a JSON object: \(text.prefix(80))")
                }
                if let warnings = object["warnings"], !(warnings is [String]) { throw Finding("its \"warnings\" is not an array of strings") }
                result.notes.append("describe: \(text.utf8.count) bytes of JSON")
            } catch {
                result.findings.append("describe \(error)")
            }
        } else {
            result.notes.append("no describe")
        }
        if let explain = plugin.api.explain {
            for (name, reading) in TestReadings.edge(kinds: kinds).prefix(12) {
                progress("explain: edge reading '\(name)'")
                do throws(Finding) {
                    let text = try reading.withCReading { raw in
                        Result { () throws(Finding) -> String in try plugin.text { explain(instance, raw, $0, $1) } }
                    }.get()
                    guard let object = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any] else {
                        throw Finding("is not a JSON object: \(text.prefix(80))")
                    }
                    if let lines = object["lines"], !(lines is [String]) { throw Finding("its \"lines\" is not an array of strings") }
                } catch {
                    result.findings.append("explain of '\(name)' \(error)")
                }
            }
        } else {
            result.notes.append("no explain")
        }
    }

    /// What declaring COINMECH_KINDS_ALLOY promises (docs/PLUGINS.md, "The alloy axis"): the
    /// plugin takes measured readings; it was built for ABI 2.1 or later; given an older host's
    /// reading (2.0: no alloy fields, the struct ending where readable memory ends) it reads
    /// nothing past it and decides as on a reading without the axis; and it never accepts a coin
    /// of no metal, nor figures no metal gives.
    private func alloy(_ result: inout CheckResult) throws(Finding) {
        guard kinds & COINMECH_KINDS_ALLOY != 0 else {
            result.notes.append("does not declare COINMECH_KINDS_ALLOY: measured readings reach it with or without the alloy axis, which it does not judge")
            return
        }
        if kinds & COINMECH_KINDS_MEASURED == 0 { result.findings.append("declares the alloy axis without COINMECH_KINDS_MEASURED: the host refuses it") }
        if PluginABI.minor(plugin.api.abi_version) < 1 {
            result.findings.append("declares the alloy axis but was built for ABI \(PluginABI.text(plugin.api.abi_version)), which has no alloy fields")
        }
        let instance = try plugin.create(config)
        defer { plugin.destroy(instance) }
        let older = MemoryLayout<coinmech_reading>.offset(of: \.conductivity_low_iacs)!
        var coins = 0
        for spec in CoinTables.usd + CoinTables.eur + CoinTables.gbp {
            let plain = Reading(deviceSeq: 1, diameterMM: spec.diameterMM, weightG: spec.weightG, thicknessMM: spec.thicknessMM)
            let without = plugin.validate(instance, plain).decision
            var flagged = plain
            flagged.alloy = Reading.Alloy(lowIACS: 5.6, highIACS: 5.6, permeability: 1)
            progress("validate: a nominal \(spec.currency) \(spec.code) in an ABI 2.0 host's reading")
            let asOlder = plugin.validate(instance, flagged, endingAtPageWith: older).decision
            if VerdictRules.fingerprint(asOlder) != VerdictRules.fingerprint(without) {
                result.findings.append("a nominal \(spec.currency) \(spec.code) in an ABI 2.0 host's reading (no alloy fields) was answered \(VerdictRules.summary(asOlder)), "
                    + "and \(VerdictRules.summary(without)) without the axis: read the alloy only when COINMECH_HAS_FIELD says the reading holds it")
            }
            guard without.verdict == COINMECH_VERDICT_ACCEPT.rawValue else { continue }
            coins += 1
            for (name, alloy) in [("no metal (a plastic token)", Reading.Alloy(lowIACS: 0, highIACS: 0, permeability: 1)),
                                  ("a NaN conductivity", Reading.Alloy(lowIACS: .nan, highIACS: 5.6, permeability: 1)),
                                  ("a negative conductivity", Reading.Alloy(lowIACS: 5.6, highIACS: -5.6, permeability: 1)),
                                  ("a conductivity beyond every metal", Reading.Alloy(lowIACS: 1e6, highIACS: 1e6, permeability: 1)),
                                  ("an infinite permeability", Reading.Alloy(lowIACS: 5.6, highIACS: 5.6, permeability: .infinity))] {
                var reading = plain
                reading.alloy = alloy
                progress("validate: a nominal \(spec.currency) \(spec.code) with \(name)")
                let call = plugin.validate(instance, reading)
                check(call, "a nominal \(spec.currency) \(spec.code) with \(name)", into: &result)
                if call.decision.verdict == COINMECH_VERDICT_ACCEPT.rawValue {
                    result.findings.append("accepted a nominal \(spec.currency) \(spec.code) with \(name): a plugin that judges the alloy never credits that")
                }
            }
        }
        result.notes.append("\(coins) nominal coins accepted without the axis, each refused with no metal and with impossible figures; all decided alike in an ABI 2.0 host's reading")
    }

    private func lifecycle(_ result: inout CheckResult) throws(Finding) {
        let cycles = strictness >= 10 ? 5_000 : 1_000
        progress("create and destroy, warming up")
        let reading = Reading(deviceSeq: 1, diameterMM: 24.26, weightG: 5.67)
        for _ in 0..<200 { let instance = try plugin.create(config); _ = plugin.validate(instance, reading); plugin.destroy(instance) }
        let heapBefore = cm_heap_in_use(), rssBefore = Self.residentBytes()
        progress("create, validate and destroy \(cycles) times")
        for _ in 0..<cycles { let instance = try plugin.create(config); _ = plugin.validate(instance, reading); plugin.destroy(instance) }
        let heapGrowth = Int64(cm_heap_in_use()) - Int64(heapBefore), rssGrowth = Int64(Self.residentBytes()) - Int64(rssBefore)
        result.notes.append("\(cycles) create/validate/destroy: heap \(Self.kib(heapGrowth)), RSS \(Self.kib(rssGrowth))")
        // A leak of 64 bytes a cycle shows in the heap; caches the plugin fills once do not.
        if heapGrowth > 64 * 1024 { result.findings.append("the heap grew \(Self.kib(heapGrowth)) over \(cycles) create/destroy cycles: destroy() leaks") }
        if rssGrowth > 1024 * 1024 { result.findings.append("resident memory grew \(Self.kib(rssGrowth)) over \(cycles) create/destroy cycles") }
    }

    /// The plugin in a real `coinmech-plugin-host` with its sandbox required (docs/PLUGINS.md,
    /// "The sandbox"), against itself in process: a plugin that opens a file, a socket or a
    /// process once loaded is stopped there, or answers otherwise.
    private func sandbox(_ result: inout CheckResult) throws(Finding) {
        progress("starting the plugin in a sandboxed plugin host")
        let file = (plugin.path as NSString).lastPathComponent
        guard file.hasPrefix("lib"), file.hasSuffix(".so"), file.count > 6 else {
            throw Finding("the sandbox check loads the plugin by name as the daemon does: name the file lib<name>.so")
        }
        var cacheTemplate = Array("\(NSTemporaryDirectory())/coinmech-pluginval-cache-XXXXXX".utf8CString)
        guard let made = mkdtemp(&cacheTemplate) else { throw Finding("mkdtemp: \(String(cString: strerror(errno)))") }
        let cache = String(cString: made)
        defer { try? FileManager.default.removeItem(atPath: cache) }
        let lines = LogBook()
        let environment = ChainEnvironment(log: { _, level, text in lines.add(level, text) }, report: { _, level, text in lines.add(level, text) })
        let spec = LinkSpec(name: "pluginval", plugin: String(file.dropFirst(3).dropLast(3)), configJSON: config,
                            policy: LinkPolicy(isolation: .process, budgetNanoseconds: 1_000_000_000, sandbox: SandboxPolicy(missing: .required)))
        let chain: Chain
        do throws(ChainBuildError) {
            chain = try ChainBuilder(loader: PluginLoader(directory: (plugin.path as NSString).deletingLastPathComponent, runtimeDirectory: cache),
                                     environment: environment).build(generation: 1, links: [spec])
        } catch {
            if case .plugin(let cause) = error.cause { throw Finding("in its sandbox: \(cause)") }
            throw Finding("in its sandbox: \(error)")
        }
        guard let link = chain.links.first, let isolated = link.validator as? IsolatedValidator else { throw Finding("no plugin host was started") }
        result.notes.append("sandbox layers: \(isolated.ready.sandbox.layers)")
        let instance = try plugin.create(config)
        defer { plugin.destroy(instance) }
        let readings = TestReadings.random(count: 100, seed: seed, kinds: kinds)
        progress("validating \(readings.count) readings in the sandbox and in process")
        for (index, reading) in readings.enumerated() {
            let inProcess = plugin.validate(instance, reading).decision
            var sandboxed = coinmech_decision()
            sandboxed.size = UInt32(MemoryLayout<coinmech_decision>.size)
            reading.withCReading { raw in link.validator.call.function(link.validator.call.context, raw, &sandboxed) }
            let stopped = ["sandbox_violation", "plugin_crashed", "plugin_hung", "plugin_unavailable"].contains(VerdictRules.text(sandboxed.reason) ?? "")
            if stopped {
                result.findings.append("reading #\(index + 1) in the sandbox: \(VerdictRules.text(sandboxed.message) ?? "stopped"): a plugin may open no file, socket or process once loaded (read what it needs in create, or at load)")
                break
            }
            if VerdictRules.fingerprint(sandboxed) != VerdictRules.fingerprint(inProcess) {
                result.findings.append("reading #\(index + 1) of seed \(seed) was answered \(VerdictRules.summary(inProcess)) in process and \(VerdictRules.summary(sandboxed)) in the sandbox: a plugin that needs files or the network once loaded cannot run isolated")
                break
            }
        }
        if !result.findings.isEmpty { result.notes += lines.all.prefix(3).map { "its host said: \($0.1)" } }
    }

    private func determinism(_ result: inout CheckResult) throws(Finding) {
        let readings = TestReadings.random(count: 500 * max(1, strictness), seed: seed, kinds: kinds)
        let first = try fingerprints(readings), second = try fingerprints(readings)
        if let index = first.indices.first(where: { first[$0] != second[$0] }) {
            result.findings.append("two fresh instances answered reading #\(index + 1) of seed \(seed) differently (\(readings[index])): verdicts must follow from the readings and the configuration alone")
        }
        result.notes.append("\(readings.count) readings, seed \(seed)")
    }

    /// The answers of a fresh instance to `readings`, in order.
    private func fingerprints(_ readings: [Reading]) throws(Finding) -> [[UInt8]] {
        let instance = try plugin.create(config)
        defer { plugin.destroy(instance) }
        progress("validating \(readings.count) readings on a fresh instance")
        return readings.map { VerdictRules.fingerprint(plugin.validate(instance, $0).decision) }
    }

    private func budget(_ result: inout CheckResult) throws(Finding) {
        let instance = try plugin.create(config)
        defer { plugin.destroy(instance) }
        let readings = TestReadings.random(count: 5_000, seed: seed, kinds: kinds)
        progress("timing \(readings.count) validate calls")
        for reading in readings.prefix(200) { _ = plugin.validate(instance, reading) }
        var samples: [UInt64] = []
        samples.reserveCapacity(readings.count)
        var decision = coinmech_decision()
        for reading in readings {
            reading.withCReading { raw in
                decision = coinmech_decision()
                decision.size = UInt32(MemoryLayout<coinmech_decision>.size)
                let start = cm_monotonic_ns()
                plugin.api.validate!(instance, raw, &decision)
                samples.append(cm_monotonic_ns() &- start)
            }
        }
        samples.sort()
        let p50 = samples[samples.count / 2], p99 = samples[samples.count * 99 / 100], worst = samples.last!
        result.notes.append("validate p50 \(Self.duration(p50)), p99 \(Self.duration(p99)), max \(Self.duration(worst)) (budget \(Self.duration(budgetNanoseconds)))")
        if p99 > budgetNanoseconds {
            result.findings.append("p99 of validate is \(Self.duration(p99)), over the budget of \(Self.duration(budgetNanoseconds)): the whole chain has about 40 ms for a coin")
        }
    }

    private func random(_ result: inout CheckResult) throws(Finding) {
        let count = 2_000 * strictness
        let readings = TestReadings.random(count: count, seed: seed, kinds: kinds)
        let instance = try plugin.create(config)
        defer { plugin.destroy(instance) }
        for (index, reading) in readings.enumerated() {
            if index % 1000 == 0 { progress("validate: random reading #\(index + 1) of seed \(seed) and on") }
            let call = plugin.validate(instance, reading)
            var found = CheckResult(check: .random, passed: true, findings: [], notes: [])
            check(call, "random reading #\(index + 1) of seed \(seed) (\(reading))", into: &found)
            result.findings += found.findings
            if result.findings.count >= 5 { break }
        }
        if !result.findings.isEmpty { result.findings.append("reproduce with --seed \(seed)") }
        result.notes.append("\(count) readings, seed \(seed)")
    }

    private func concurrency(_ result: inout CheckResult) throws(Finding) {
        let readings = TestReadings.random(count: 2_000, seed: seed, kinds: kinds)
        let reference = try fingerprints(readings)
        // The contract's case: a reload creates and destroys instances while one validates.
        progress("validating on one thread while another creates and destroys 200 instances")
        let validator = try plugin.create(config)
        let plugin = plugin, config = config
        let finished = DispatchGroup()
        finished.enter()
        Thread {
            for _ in 0..<200 {
                if case .success(let instance) = plugin.tryCreate(config) { plugin.destroy(instance) }
            }
            finished.leave()
        }.start()
        let answers = readings.map { VerdictRules.fingerprint(plugin.validate(validator, $0).decision) }
        finished.wait()
        plugin.destroy(validator)
        if answers != reference { result.findings.append("an instance answered differently while others were created and destroyed: create or destroy touches state instances share") }
        guard plugin.metadata.concurrentInstances else {
            result.notes.append("instances not declared concurrent: not validated at the same time")
            return
        }
        progress("four instances validating at the same time")
        let outcomes = ConcurrentAnswers(count: 4)
        for slot in 0..<4 {
            finished.enter()
            Thread {
                defer { finished.leave() }
                guard case .success(let instance) = plugin.tryCreate(config) else { return }
                outcomes.set(slot, readings.map { VerdictRules.fingerprint(plugin.validate(instance, $0).decision) })
                plugin.destroy(instance)
            }.start()
        }
        finished.wait()
        if outcomes.all.contains(where: { $0 != reference }) {
            result.findings.append("declares COINMECH_PLUGIN_CONCURRENT_INSTANCES, but instances deciding at the same time answered differently than one alone")
        }
        result.notes.append("4 concurrent instances × \(readings.count) readings")
    }

    private func sizes(_ result: inout CheckResult) throws(Finding) {
        let readings = TestReadings.random(count: 1_000, seed: seed, kinds: kinds)
        let reference = try fingerprints(readings)
        let instance = try plugin.create(config)
        defer { plugin.destroy(instance) }
        progress("validating with a newer host's larger reading and decision")
        for (index, reading) in readings.enumerated() {
            let call = plugin.validate(instance, reading, readingTail: 32, decisionTail: 64)
            if call.wroteUnknownFields || call.wrotePastSize {
                result.findings.append("with a newer host's larger decision, wrote where it has no field (reading #\(index + 1))")
                break
            }
            if VerdictRules.fingerprint(call.decision) != reference[index] {
                result.findings.append("answered reading #\(index + 1) differently when the host's reading was larger: a plugin reads only the fields it knows")
                break
            }
        }
    }

    private func allocations(_ result: inout CheckResult) throws(Finding) {
        let readings = TestReadings.random(count: 2_000, seed: seed, kinds: kinds)
        let instance = try plugin.create(config)
        defer { plugin.destroy(instance) }
        progress("warming up, then counting allocations in validate")
        let source = strdup("pluginval")
        defer { free(source) }
        let raws = readings.map { reading -> coinmech_reading in
            var raw = reading.cLayout
            raw.source = UnsafePointer(source)
            return raw
        }
        var decision = coinmech_decision()
        // The loop is C: nothing but the plugin's own code allocates in it.
        let call = unsafeBitCast(plugin.api.validate!, to: (@convention(c) (UnsafeMutableRawPointer?, UnsafeRawPointer?, UnsafeMutableRawPointer?) -> Void).self)
        func pass() -> UInt64 {
            raws.withUnsafeBytes { arguments in
                coinmech_allocations_in_calls(call, instance, arguments.baseAddress, MemoryLayout<coinmech_reading>.stride, raws.count,
                                              &decision, MemoryLayout<coinmech_decision>.size)
            }
        }
        _ = pass()
        let allocated = pass()
        result.notes.append("\(allocated) allocations in \(raws.count) validate calls")
        if allocated > 0 {
            result.findings.append("validate allocated \(allocated) times in \(raws.count) calls once warm: prepare everything in create (the deciding path must not wait on the allocator)")
        }
    }

    // MARK: Figures

    static func residentBytes() -> UInt64 {
        guard let statm = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
        let pages = statm.split(separator: " ").dropFirst().first.flatMap { UInt64($0) } ?? 0
        return pages * UInt64(sysconf(Int32(_SC_PAGESIZE)))
    }

    static func kib(_ bytes: Int64) -> String { String(format: "%+.1f KiB", Double(bytes) / 1024) }

    static func duration(_ nanoseconds: UInt64) -> String {
        nanoseconds < 10_000 ? "\(nanoseconds) ns" : nanoseconds < 10_000_000 ? String(format: "%.1f µs", Double(nanoseconds) / 1e3)
            : String(format: "%.1f ms", Double(nanoseconds) / 1e6)
    }
}

/// Answers of concurrent instances, one slot per thread.
final class ConcurrentAnswers: @unchecked Sendable {
    // @unchecked: `slots` is guarded by `lock`.
    private let lock = NSLock()
    private var slots: [[[UInt8]]]

    init(count: Int) { slots = Array(repeating: [], count: count) }

    func set(_ slot: Int, _ answers: [[UInt8]]) {
        lock.lock()
        defer { lock.unlock() }
        slots[slot] = answers
    }

    var all: [[[UInt8]]] {
        lock.lock()
        defer { lock.unlock() }
        return slots
    }
}
