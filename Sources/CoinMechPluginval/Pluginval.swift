import ArgumentParser
import CoinMechPlugins
import CoinMechSettings
import Foundation

@main
struct Pluginval: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "coinmech-pluginval",
        abstract: "Checks a CoinMech validator plugin before a daemon loads it, each check in a process of its own.",
        discussion: """
            Strictness runs every check at or below it: 1 load, ABI, metadata, create, edge readings; 2 ELF exports;
            3 describe/explain and bad configurations; 5 (the recommended minimum) create/destroy without growth,
            determinism, time budget; 6 random readings; 7 threads; 8 a newer host's struct sizes; 9 allocations;
            10 more of everything. Exit status: 0 every check passed; 1 a check failed; 2 the checks could not run.
            A failing random run names the seed that reproduces it (--seed).
            """)

    @Argument(help: "The plugin's shared object.") var plugin: String
    @Option(help: "The link's configuration: a JSON or YAML file holding one object (default: {}).") var config: String?
    @Option(help: "1 to 10.") var strictness = 5
    @Option(help: "Seed of the random readings (default: a new one, printed).") var seed: UInt64?
    @Option(help: "The p99 a validate call must stay within, in milliseconds.") var budgetMs: Double = 1
    @Option(help: "Seconds a check may take before it counts as hung.") var timeout: Double = 120
    @Flag(help: "Print the report as one JSON object.") var json = false

    // The child's side: one check, reported on a descriptor.
    @Option(help: .hidden) var child: Check?
    @Option(help: .hidden) var configJSON: String?
    @Option(help: .hidden) var reportFd: Int32?

    func validate() throws {
        guard (1...10).contains(strictness) else { throw ValidationError("--strictness is 1 to 10 (5 is the recommended minimum)") }
        guard budgetMs > 0 else { throw ValidationError("--budget-ms must be above 0") }
    }

    func run() throws {
        if let child, let reportFd {
            return runChild(child, report: ReportPipe(descriptor: reportFd))
        }
        guard FileManager.default.isReadableFile(atPath: plugin) else {
            FileHandle.standardError.write(Data("coinmech-pluginval: cannot read \(plugin)\n".utf8))
            throw ExitCode(2)
        }
        var configText = "{}"
        if let config {
            do {
                configText = try SettingsTable.load(path: config).json()
            } catch {
                FileHandle.standardError.write(Data("coinmech-pluginval: --config: \(error)\n".utf8))
                throw ExitCode(2)
            }
        }
        let seed = seed ?? UInt64.random(in: 1...UInt64(UInt32.max))
        let path = URL(fileURLWithPath: plugin).standardizedFileURL.path
        var results: [CheckResult] = []
        for check in Check.allCases where check.strictness <= strictness {
            if !json && isatty(2) != 0 { FileHandle.standardError.write(Data("  … \(check.rawValue)\r".utf8)) }
            results.append(ChildRun.run(check, plugin: path, configJSON: configText, strictness: strictness, seed: seed,
                                        budgetMilliseconds: budgetMs, timeout: timeout))
        }
        let report = Report(plugin: path, strictness: strictness, seed: seed, results: results)
        print(json ? report.json : report.text)
        if !report.passed { throw ExitCode(1) }
    }

    private func runChild(_ check: Check, report: ReportPipe) {
        report.progress("loading the plugin")
        let plugin: PluginUnderTest
        do throws(PluginUnderTest.Finding) {
            plugin = try PluginUnderTest(path: self.plugin)
        } catch {
            report.result(CheckResult(check: check, passed: false, findings: [error.description], notes: []))
            return
        }
        let run = CheckRun(plugin: plugin, config: configJSON ?? "{}", strictness: strictness, seed: seed ?? 1,
                           budgetNanoseconds: UInt64(budgetMs * 1e6), progress: report.progress)
        report.result(run.run(check))
    }
}

extension Check: ExpressibleByArgument {}

/// Every check's outcome, for people or as JSON.
struct Report: Codable {
    let plugin: String
    let strictness: Int
    let seed: UInt64
    let results: [CheckResult]

    var passed: Bool { results.allSatisfy(\.passed) }

    var text: String {
        var lines = ["coinmech-pluginval: \(plugin)", "strictness \(strictness), seed \(seed)"]
        for result in results {
            let time = String(format: "%6.0f ms", result.milliseconds)
            lines.append("\(result.passed ? "PASS" : "FAIL") \(result.check.rawValue.padding(toLength: 12, withPad: " ", startingAt: 0)) \(time)  \(result.check.summary)")
            lines += result.findings.map { "       ✗ \($0)" }
            lines += result.notes.map { "       · \($0)" }
        }
        let failed = results.filter { !$0.passed }.count
        lines.append(failed == 0 ? "PASSED: \(results.count) checks at strictness \(strictness)"
                                 : "FAILED: \(failed) of \(results.count) checks (reproduce with --strictness \(strictness) --seed \(seed))")
        return lines.joined(separator: "\n")
    }

    var json: String {
        struct Document: Encodable {
            let plugin: String, strictness: Int, seed: UInt64, passed: Bool, results: [CheckResult]
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let document = Document(plugin: plugin, strictness: strictness, seed: seed, passed: passed, results: results)
        return (try? encoder.encode(document)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
    }
}
