import ArgumentParser
import CLinux
import CoinMechChain
import CoinMechPlugins
import Foundation

struct IsolationBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "isolation",
        abstract: "What `isolation: process` adds per reading: the same link in process and in a plugin host, p50/p99/max.")

    @Option(help: "Readings decided back to back (a warm host: the channel's round trip).") var readings = 20_000
    @Option(help: "Readings decided one every --pace-ms (the host sleeps between them, as between coins).") var paced = 2_000
    @Option(help: "Milliseconds between paced readings.") var paceMs: Double = 2
    @Option(help: "Plugin of the link.") var plugin = "coin-table"
    @Option(help: "Its configuration (JSON).") var config = #"{"currency":"USD"}"#
    @Option(help: "Random seed of the mix.") var seed: UInt64 = 2026
    @Option(help: "Directory holding the plugins and coinmech-plugin-host (default: next to this executable).") var pluginDir: String?
    @Flag(help: "Print one JSON object instead of a table.") var json = false

    func run() throws {
        let directory = pluginDir ?? executableDirectory()
        let runtime = NSTemporaryDirectory() + "coinmech-bench-isolation-\(getpid())"
        defer { try? FileManager.default.removeItem(atPath: runtime) }
        let environment = ChainEnvironment(log: PluginLog.discard, report: PluginLog.standardError,
                                           isolation: IsolationSettings(hostExecutable: "\(directory)/\(HostLocator.executableName)"))
        let builder = ChainBuilder(loader: PluginLoader(directory: directory, runtimeDirectory: runtime), environment: environment)
        // A budget far above anything measured: the bench measures, it does not contain.
        let budget: UInt64 = 1_000_000_000
        let inProcess = try builder.build(generation: 1, links: [LinkSpec(name: "link", plugin: plugin, configJSON: config,
                                                                          policy: LinkPolicy(isolation: .inProcess, budgetNanoseconds: budget))])
        let isolated = try builder.build(generation: 2, links: [LinkSpec(name: "link", plugin: plugin, configJSON: config,
                                                                        policy: LinkPolicy(isolation: .process, budgetNanoseconds: budget))])
        // The same host with no sandbox: what the layers themselves cost.
        let bare = try builder.build(generation: 3, links: [LinkSpec(name: "link", plugin: plugin, configJSON: config,
                                                                    policy: LinkPolicy(isolation: .process, budgetNanoseconds: budget, sandbox: SandboxPolicy(missing: .off)))])
        let mix = randomUSMix(count: max(readings, paced), seed: seed)
        // Each chain decides each reading once: coin-table follows drift, so a second look differs.
        for reading in mix.prefix(2_000) {
            let local = inProcess.decide(reading).verdict
            guard isolated.decide(reading).verdict == local, bare.decide(reading).verdict == local else {
                throw ValidationError("the isolated link disagrees with the same plugin in process on \(reading)")
            }
        }
        var rows: [IsolationRow] = []
        for (name, count, pace) in [("back to back", readings, 0.0), ("paced every \(String(format: "%g", paceMs)) ms", paced, paceMs)] {
            let local = Self.latencies(inProcess, Array(mix.prefix(count)), paceMilliseconds: pace)
            let unsandboxed = Self.latencies(bare, Array(mix.prefix(count)), paceMilliseconds: pace)
            let remote = Self.latencies(isolated, Array(mix.prefix(count)), paceMilliseconds: pace)
            rows.append(IsolationRow(workload: name, readings: count, in_process: Percentiles(local), unsandboxed: Percentiles(unsandboxed),
                                     isolated: Percentiles(remote),
                                     added_p99_us: Double(Int64(percentile(remote, 0.99)) - Int64(percentile(local, 0.99))) / 1000,
                                     sandbox_p99_us: Double(Int64(percentile(remote, 0.99)) - Int64(percentile(unsandboxed, 0.99))) / 1000))
        }
        if json {
            print(String(decoding: try JSONEncoder.sorted.encode(rows), as: UTF8.self))
            return
        }
        print("isolation bench: link '\(plugin)' (\(config)), one decide per reading, wall clock")
        print("  workload                 readings   in process p50 / p99 / max       isolated, no sandbox p50 / p99 / max   isolated, sandboxed p50 / p99 / max   added p99   of it, sandbox")
        for row in rows {
            print("  \(row.workload.pad(24)) \(String(row.readings).pad(8, left: true))   \(row.in_process.text.pad(30))   \(row.unsandboxed.text.pad(36))   \(row.isolated.text.pad(35))   \(String(format: "%.1f µs", row.added_p99_us).pad(10))  \(String(format: "%.1f µs", row.sandbox_p99_us))")
        }
        print("  goal: added p99 ≤ 200 µs with the sandbox on (the mech's deadline is 50 ms)")
    }

    /// Nanoseconds each decide took, sorted.
    static func latencies(_ chain: Chain, _ readings: [Reading], paceMilliseconds: Double) -> [UInt64] {
        var decision = Decision()
        var samples: [UInt64] = []
        samples.reserveCapacity(readings.count)
        for reading in readings {
            if paceMilliseconds > 0 { usleep(useconds_t(paceMilliseconds * 1000)) }
            let start = cm_monotonic_ns()
            chain.decide(reading, into: &decision)
            samples.append(cm_monotonic_ns() &- start)
        }
        return samples.sorted()
    }
}

struct Percentiles: Encodable {
    let p50_ns: UInt64
    let p99_ns: UInt64
    let max_ns: UInt64

    init(_ sorted: [UInt64]) {
        p50_ns = percentile(sorted, 0.5)
        p99_ns = percentile(sorted, 0.99)
        max_ns = sorted.last ?? 0
    }

    var text: String { "\(Self.format(p50_ns)) / \(Self.format(p99_ns)) / \(Self.format(max_ns))" }

    static func format(_ ns: UInt64) -> String {
        ns < 10_000 ? "\(ns) ns" : ns < 10_000_000 ? String(format: "%.1f µs", Double(ns) / 1e3) : String(format: "%.1f ms", Double(ns) / 1e6)
    }
}

struct IsolationRow: Encodable {
    let workload: String
    let readings: Int
    let in_process: Percentiles
    /// The plugin host with `sandbox: off`.
    let unsandboxed: Percentiles
    /// The plugin host as it runs by default: sandboxed.
    let isolated: Percentiles
    let added_p99_us: Double
    /// What the sandbox adds over the bare host (noise can make it negative).
    let sandbox_p99_us: Double
}
