import ArgumentParser
import CoinMechChain
import CoinMechPlugins
import Foundation
import Synchronization

/// `coinmech-bench reload`: decision latency while the chain is reloaded as fast as possible,
/// against steady state, in one run; reloads per second; resident memory per reload.
struct ReloadBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "reload",
        abstract: "Decision latency during a reload storm vs steady state; reloads/s; resident memory per reload.")

    @Option(help: "Seconds of steady deciding, then of deciding under the storm.") var seconds = 3.0
    @Option(help: "Reloads that each load new versions of the Swift plugins, for the memory figure.") var newVersions = 100
    @Option(help: "Directory holding the plugins (default: next to this executable).") var pluginDir: String?
    @Flag(help: "Print one JSON object instead of a table.") var json = false

    final class Samples: @unchecked Sendable {
        // @unchecked: filled by the deciding thread alone, read after it has been joined.
        var steady: [UInt64] = []
        var storm: [UInt64] = []
        init() {
            steady.reserveCapacity(20_000_000)
            storm.reserveCapacity(20_000_000)
        }
    }

    func run() throws {
        let source = pluginDir ?? executableDirectory()
        let work = NSTemporaryDirectory() + "coinmech-reload-\(getpid())"
        defer { try? FileManager.default.removeItem(atPath: work) }
        let plugins = "\(work)/plugins"
        try FileManager.default.createDirectory(atPath: plugins, withIntermediateDirectories: true)
        chmod(work, 0o700)
        chmod(plugins, 0o755)
        for name in ["sanity", "coin-table"] {
            try FileManager.default.copyItem(atPath: "\(source)/lib\(name).so", toPath: "\(plugins)/lib\(name).so")
        }
        let links = [LinkSpec(plugin: "sanity"), LinkSpec(name: "usd", plugin: "coin-table", configJSON: #"{"currency":"USD"}"#)]
        let builder = ChainBuilder(loader: PluginLoader(directory: plugins, runtimeDirectory: "\(work)/run"))
        let holder = ChainHolder(try builder.build(generation: 1, links: links))
        let mix = randomUSMix(count: 4096, seed: 7)

        // The decider: decides continuously on whatever chain is current, timing each decision.
        let samples = Samples()
        let phase = Atomic<Int>(0)  // 0 steady, 1 storm, 2 stop
        let decider = Thread {
            var decision = Decision()
            var index = 0
            var now = timespec()
            while true {
                let current = phase.load(ordering: .relaxed)
                if current == 2 { break }
                clock_gettime(CLOCK_MONOTONIC, &now)
                let start = UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
                holder.current.decide(mix[index & 4095], into: &decision)
                clock_gettime(CLOCK_MONOTONIC, &now)
                let elapsed = UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec) - start
                if current == 0 { samples.steady.append(elapsed) } else { samples.storm.append(elapsed) }
                index += 1
            }
        }
        decider.start()
        Thread.sleep(forTimeInterval: seconds)
        phase.store(1, ordering: .relaxed)
        var reloads = 0
        var generation: UInt64 = 1
        let stormStart = Date()
        while Date().timeIntervalSince(stormStart) < seconds {
            generation += 1
            holder.swap(try builder.build(generation: generation, links: links))
            reloads += 1
        }
        let stormSeconds = Date().timeIntervalSince(stormStart)
        phase.store(2, ordering: .relaxed)
        while !decider.isFinished { usleep(1000) }

        // Memory: unchanged plugins (same content, same image) and new versions (new images).
        let beforeSame = residentKiB()
        for _ in 0..<newVersions {
            generation += 1
            holder.swap(try builder.build(generation: generation, links: links))
        }
        let sameKiB = Double(residentKiB() - beforeSame) / Double(newVersions)
        let beforeNew = residentKiB()
        for version in 0..<newVersions {
            // A new file content per reload: the plugin with a few distinct trailing bytes.
            for name in ["sanity", "coin-table"] {
                var bytes = try Data(contentsOf: URL(fileURLWithPath: "\(source)/lib\(name).so"))
                bytes.append(contentsOf: Array("coinmech-bench-version-\(version)".utf8))
                let staging = "\(plugins)/.lib\(name).so.new"
                try bytes.write(to: URL(fileURLWithPath: staging))
                chmod(staging, 0o644)
                rename(staging, "\(plugins)/lib\(name).so")
            }
            generation += 1
            holder.swap(try builder.build(generation: generation, links: links))
        }
        let newKiB = Double(residentKiB() - beforeNew) / Double(newVersions)

        let steady = samples.steady.sorted(), storm = samples.storm.sorted()
        let steadyP99 = percentile(steady, 0.99), stormP99 = percentile(storm, 0.99)
        let result = ReloadResult(
            reload_p99_over_steady: Double(stormP99) / Double(max(1, steadyP99)), reloads_per_s: Double(reloads) / stormSeconds,
            rss_kib_per_reload: newKiB, rss_kib_per_reload_unchanged: sameKiB, steady_p50_ns: percentile(steady, 0.5),
            steady_p99_ns: steadyP99, storm_p50_ns: percentile(storm, 0.5), storm_p99_ns: stormP99,
            storm_max_ns: storm.last ?? 0, decisions_steady: steady.count, decisions_storm: storm.count, reloads: reloads)
        if json {
            print(String(decoding: try JSONEncoder.sorted.encode(result), as: UTF8.self))
        } else {
            print("""
                reload bench: chain sanity → coin-table USD, one thread deciding while another reloads
                  phase                       decisions      p50 ns     p99 ns     max ns
                  steady \(seconds) s              \(result.decisions_steady)   \(result.steady_p50_ns)   \(result.steady_p99_ns)
                  reload storm \(seconds) s        \(result.decisions_storm)   \(result.storm_p50_ns)   \(result.storm_p99_ns)   \(result.storm_max_ns)
                  reloads: \(reloads) in \(String(format: "%.2f", stormSeconds)) s = \(String(format: "%.0f", result.reloads_per_s))/s
                  p99 during storm over steady: \(String(format: "%.2f", result.reload_p99_over_steady))   (target ≤ 2)
                  resident memory per reload: \(String(format: "%.1f", newKiB)) KiB with new plugin versions (Swift images are never unloaded), \
                \(String(format: "%.1f", sameKiB)) KiB with unchanged plugins
                """)
        }
    }

    private func residentKiB() -> Int {
        guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
        let fields = text.split(separator: " ")
        return (Int(fields[1]) ?? 0) * Int(sysconf(Int32(_SC_PAGESIZE))) / 1024
    }

}

struct ReloadResult: Encodable {
    let reload_p99_over_steady: Double
    let reloads_per_s: Double
    let rss_kib_per_reload: Double
    let rss_kib_per_reload_unchanged: Double
    let steady_p50_ns: UInt64
    let steady_p99_ns: UInt64
    let storm_p50_ns: UInt64
    let storm_p99_ns: UInt64
    let storm_max_ns: UInt64
    let decisions_steady: Int
    let decisions_storm: Int
    let reloads: Int
}
