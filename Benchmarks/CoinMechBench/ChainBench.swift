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
    @Option(help: "Passes over the mix per measurement; the best of --rounds is reported.") var passes = 30
    @Option(help: "Measurement rounds.") var rounds = 5
    @Option(help: "Random seed of the mix.") var seed: UInt64 = 2026
    @Option(help: "Directory holding the plugins (default: next to this executable).") var pluginDir: String?
    @Flag(help: "Print one JSON object instead of a table.") var json = false
    @Option(help: "Profile one implementation only (coinmech, seed, inline); prints its ns/reading.") var only: String?

    func run() throws {
        let mix = randomUSMix(count: readings, seed: seed)
        let directory = pluginDir ?? executableDirectory()
        let runtime = NSTemporaryDirectory() + "coinmech-bench-\(getpid())"
        defer { if ProcessInfo.processInfo.environment["COINMECH_BENCH_KEEP"] == nil { try? FileManager.default.removeItem(atPath: runtime) } }
        let chain = try ChainBuilder(loader: PluginLoader(directory: directory, runtimeDirectory: runtime)).build(
            generation: 1, links: [LinkSpec(plugin: "sanity"), LinkSpec(name: "usd", plugin: "coin-table", configJSON: #"{"currency":"USD"}"#)])
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

        var sink = 0
        var decision = Decision()
        if let only {
            let ns: Double
            switch only {
            case "coinmech":
                ns = best(of: rounds) {
                    for _ in 0..<passes { for reading in mix { chain.decide(reading, into: &decision); sink &+= Int(decision.acceptedValueMinor) } }
                }
            case "seed":
                ns = best(of: rounds) {
                    for _ in 0..<passes { for i in mix.indices { sink &+= textbook.insert(diameter: diameters[i], weight: weights[i]) } }
                }
            case "inline":
                ns = best(of: rounds) { for _ in 0..<passes { for i in mix.indices { sink &+= inlineLadder(diameters[i], weights[i]) } } }
            default:
                throw ValidationError("--only takes coinmech, seed or inline")
            }
            print(String(format: "%@: %.1f ns/reading (sink %d)", only, ns / Double(passes * readings), sink & 1))
            return
        }
        // The readings are borrowed in place, as the deciding loop holds them.
        let coinmech = mix.withUnsafeBufferPointer { mix in
            best(of: rounds) {
                for _ in 0..<passes {
                    for index in mix.indices {
                        chain.decide(mix[index], into: &decision)
                        sink &+= Int(decision.acceptedValueMinor)
                    }
                }
            }
        } / Double(passes * readings)
        let seedNs = best(of: rounds) {
            for _ in 0..<passes {
                for index in mix.indices { sink &+= textbook.insert(diameter: diameters[index], weight: weights[index]) }
            }
        } / Double(passes * readings)
        let inline = best(of: rounds) {
            for _ in 0..<passes { for index in mix.indices { sink &+= inlineLadder(diameters[index], weights[index]) } }
        } / Double(passes * readings)

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
                chain bench: \(readings) US readings (10 % slugs, σ 0.8 %), best of \(rounds) × \(passes) passes
                  implementation                      ns/reading   allocations/reading
                  CoinMech (sanity → coin-table USD)  \(pad(coinmech))   \(result.coinmech_allocations_per_reading)
                  textbook chain of responsibility    \(pad(seedNs))   \(result.seed_allocations_per_reading)
                  inline if ladder (floor)            \(pad(inline))   0
                  speedup vs textbook: \(String(format: "%.1f", result.speedup_vs_seed))×   (target ≥ 10)
                  overhead vs inline:  \(String(format: "%.2f", result.overhead_vs_inline))×   (target ≤ 4)
                """)
        }
    }

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
