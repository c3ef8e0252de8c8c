import AllocationCounter
import ArgumentParser
import CoinMechChain
import CoinMechPlugins
import Foundation

struct ChainBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "chain",
        abstract: "ns per reading: CoinMech chain (sanity → coin-table USD) vs the textbook design vs an inline if ladder.")

    @Option(help: "Readings in the random mix (large enough that no branch predictor learns it).") var readings = 65_536
    @Option(help: "Passes over the mix per measurement; the best of --rounds is reported.") var passes = 10
    @Option(help: "Measurement rounds; each round runs every implementation once, in turn.") var rounds = 15
    @Option(help: "Random seed of the mix.") var seed: UInt64 = 2026
    @Option(help: "Directory holding the plugins (default: next to this executable).") var pluginDir: String?
    @Flag(help: "Print one JSON object instead of a table.") var json = false
    @Option(help: "Run one implementation only (coinmech, seed, inline, or a --breakdown row), e.g. under perf.") var only: String?
    @Flag(help: "Also measure where the chain's time goes: no links, one C link that passes, sanity alone.") var breakdown = false

    func run() throws {
        let mix = randomUSMix(count: readings, seed: seed)
        let directory = pluginDir ?? executableDirectory()
        let runtime = NSTemporaryDirectory() + "coinmech-bench-\(getpid())"
        defer { if ProcessInfo.processInfo.environment["COINMECH_BENCH_KEEP"] == nil { try? FileManager.default.removeItem(atPath: runtime) } }
        let chain = try ChainBuilder(loader: PluginLoader(directory: directory, runtimeDirectory: runtime)).build(
            generation: 1, links: [LinkSpec(plugin: "sanity"), LinkSpec(name: "usd", plugin: "coin-table", configJSON: Self.ladderTable)])
        let textbook = TextbookCoinSorter()
        let diameters = mix.map { $0.diameterMM! }, weights = mix.map { $0.weightG! }

        // The three must agree on every reading, or the comparison means nothing.
        for (index, reading) in mix.enumerated() {
            let ours = chain.decide(reading)
            let theirs = textbook.insert(diameter: diameters[index], weight: weights[index])
            let floor = inlineLadder(diameters[index], weights[index])
            let value = Int(ours.acceptedValueMinor)
            guard value == floor, value == theirs else {
                throw ValidationError("implementations disagree on reading \(index): \(reading): coinmech \(value), textbook \(theirs), inline \(floor)")
            }
        }

        // Each workload keeps its state local (a captured var would be checked for exclusive
        // access on every use) and returns a sum of the values, so nothing is optimised away.
        let passes = passes
        func chainWorkload(_ chain: Chain) -> () -> Int {
            {
                var sink = 0
                var decision = Decision()
                // The readings are borrowed in place, as the deciding loop holds them.
                mix.withUnsafeBufferPointer { mix in
                    for _ in 0..<passes {
                        for index in mix.indices {
                            chain.decide(mix[index], into: &decision)
                            sink &+= Int(decision.acceptedValueMinor)
                        }
                    }
                }
                return sink
            }
        }
        var workloads: [(name: String, run: () -> Int)] = [
            ("coinmech", chainWorkload(chain)),
            ("seed", {
                var sink = 0
                for _ in 0..<passes { for index in diameters.indices { sink &+= textbook.insert(diameter: diameters[index], weight: weights[index]) } }
                return sink
            }),
            ("inline", {
                var sink = 0
                for _ in 0..<passes { for index in diameters.indices { sink &+= inlineLadder(diameters[index], weights[index]) } }
                return sink
            }),
        ]
        if breakdown {
            let builder = ChainBuilder(loader: PluginLoader(directory: directory, runtimeDirectory: runtime))
            workloads += [
                ("terminal link only", chainWorkload(Chain(generation: 2, links: []))),
                ("one C link that passes", chainWorkload(try builder.build(
                    generation: 3, links: [LinkSpec(plugin: "weight-floor", configJSON: #"{"min_weight_g":0.01}"#)]))),
                ("sanity alone", chainWorkload(try builder.build(generation: 4, links: [LinkSpec(plugin: "sanity")]))),
                // coin-table's defaults scan the 4 USD rows and the 4 foreign coins that can come near them.
                ("sanity → table defaults", chainWorkload(try builder.build(
                    generation: 5, links: [LinkSpec(plugin: "sanity"), LinkSpec(name: "usd", plugin: "coin-table", configJSON: #"{"currency":"USD"}"#)]))),
            ]
        }
        if let only {
            guard let workload = workloads.first(where: { $0.name == only }) else {
                throw ValidationError("--only takes one of: \(workloads.map(\.name).joined(separator: ", "))")
            }
            workloads = [workload]
        }
        var sink = 0
        var decision = Decision()
        let perReading = interleavedBest(rounds: rounds, workloads.map(\.run), sink: &sink).map { $0 / Double(passes * readings) }
        let measured = Dictionary(uniqueKeysWithValues: zip(workloads.map(\.name), perReading))
        if only != nil || breakdown {
            for (name, ns) in zip(workloads.map(\.name), perReading) {
                print("\(name.padding(toLength: 26, withPad: " ", startingAt: 0)) \(pad(ns)) ns/reading")
            }
            if only != nil { return }
        }
        let coinmech = measured["coinmech"]!, seedNs = measured["seed"]!, inline = measured["inline"]!

        // Allocations on the deciding path: count them over one pass, after warm-up.
        let before = coinmech_allocation_count()
        for index in mix.indices {
            chain.decide(mix[index], into: &decision)
            sink &+= Int(decision.acceptedValueMinor)
        }
        let chainAllocations = coinmech_allocation_count() - before
        let beforeSeed = coinmech_allocation_count()
        for index in mix.indices { sink &+= textbook.insert(diameter: diameters[index], weight: weights[index]) }
        let seedAllocations = coinmech_allocation_count() - beforeSeed

        let result = ChainResult(
            coinmech_ns: coinmech, seed_ns: seedNs, inline_ns: inline, speedup_vs_seed: seedNs / coinmech,
            overhead_vs_inline: coinmech / inline,
            coinmech_allocations_per_reading: Double(chainAllocations) / Double(readings),
            seed_allocations_per_reading: Double(seedAllocations) / Double(readings), readings: readings, sink: sink & 1)
        if json {
            print(String(decoding: try JSONEncoder.sorted.encode(result), as: UTF8.self))
        } else {
            print("""
                chain bench: \(readings) US readings (10 % slugs, σ 0.8 %), best of \(rounds) interleaved rounds × \(passes) passes
                  implementation                      ns/reading   allocations/reading
                  CoinMech (sanity → coin-table USD)  \(pad(coinmech))   \(result.coinmech_allocations_per_reading)
                  textbook chain of responsibility    \(pad(seedNs))   \(result.seed_allocations_per_reading)
                  inline if ladder (floor)            \(pad(inline))   0
                  speedup vs textbook: \(String(format: "%.1f", result.speedup_vs_seed))×   (target ≥ 10)
                  overhead vs inline:  \(String(format: "%.2f", result.overhead_vs_inline))×   (target ≤ 4)
                """)
        }
    }

    /// coin-table set up to decide as the ±5 % ladder does, so the three implementations can be
    /// checked against each other: a hard ±5 % limit, σ-windows wider than it, no margin, windows held still, no
    /// foreign coins. It runs the same scan as any configuration, over the 4 USD rows.
    static let ladderTable = #"{"currency":"USD","tolerance":0.05,"sensor_noise":{"diameter":0.2,"weight":0.2},"margin":0,"foreign":[],"follow_drift":false}"#

    private func pad(_ value: Double) -> String {
        let text = String(format: "%.1f", value)
        return String(repeating: " ", count: max(0, 10 - text.count)) + text
    }
}

struct ChainResult: Encodable {
    let coinmech_ns: Double
    let seed_ns: Double
    let inline_ns: Double
    let speedup_vs_seed: Double
    let overhead_vs_inline: Double
    let coinmech_allocations_per_reading: Double
    let seed_allocations_per_reading: Double
    let readings: Int
    let sink: Int
}

/// Nanoseconds of the fastest round of each workload. Every round runs each workload once, in
/// turn, so a burst of noise on a shared machine lands on all of them alike.
func interleavedBest(rounds: Int, _ workloads: [() -> Int], sink: inout Int) -> [Double] {
    var fastest = [Double](repeating: .infinity, count: workloads.count)
    for _ in 0..<rounds {
        for (index, workload) in workloads.enumerated() {
            let start = DispatchTime.now().uptimeNanoseconds
            sink &+= workload()
            fastest[index] = min(fastest[index], Double(DispatchTime.now().uptimeNanoseconds - start))
        }
    }
    return fastest
}

/// Nanoseconds of the fastest of `rounds` runs of `body`.
func best(of rounds: Int, _ body: () -> Void) -> Double {
    var fastest = Double.infinity
    for _ in 0..<rounds {
        let start = DispatchTime.now().uptimeNanoseconds
        body()
        fastest = min(fastest, Double(DispatchTime.now().uptimeNanoseconds - start))
    }
    return fastest
}

/// The `p` quantile of sorted samples (nearest rank); 0 for none.
func percentile<T: BinaryInteger>(_ sorted: [T], _ p: Double) -> T {
    guard !sorted.isEmpty else { return 0 }
    return sorted[min(sorted.count - 1, max(0, Int((p * Double(sorted.count)).rounded(.up)) - 1))]
}

/// `value` right-aligned in `width` characters, for the benches' tables.
func pad(_ value: Int, _ width: Int = 8) -> String {
    let text = String(value)
    return String(repeating: " ", count: max(0, width - text.count)) + text
}

func executableDirectory() -> String {
    let exe = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
    return URL(fileURLWithPath: exe).deletingLastPathComponent().path
}

extension JSONEncoder {
    static var sorted: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return encoder
    }
}
