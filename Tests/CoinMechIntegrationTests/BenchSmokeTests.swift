@testable import CoinMechTestSupport
import Foundation
import Testing

/// Every `coinmech-bench` subcommand once, in a short form: a few cabinets, a few seconds. The
/// figures are the long forms' to show (docs/PERFORMANCE.md); here only that each bench still
/// runs to its end and prints its JSON, so that a bench cannot stop working unseen, as the
/// fleet's once did when the schema grew a step it counted. `fraud` has its own short form
/// (`FraudBenchSmokeTests`), which also judges what a few thousand attempts can tell.
@Suite("coinmech-bench, every subcommand in a short form", .serialized)
struct BenchSmokeTests {
    struct Smoke: CustomTestStringConvertible, Sendable {
        var arguments: [String]
        /// Keys its JSON must carry (in an object, or in each object of an array).
        var keys: [String]
        var testDescription: String { arguments.joined(separator: " ") }
    }

    static let smokes: [Smoke] = [
        Smoke(arguments: ["chain", "--readings", "1024", "--passes", "1", "--rounds", "1"], keys: ["coinmech_ns", "seed_ns", "inline_ns"]),
        Smoke(arguments: ["e2e", "--seconds", "2", "--burst", "50", "--floor-paced", "20"], keys: ["e2e_p99_us", "floor_p99_us", "deadline_misses"]),
        Smoke(arguments: ["commit", "--commits", "30", "--dir", NSTemporaryDirectory()], keys: ["commit_p50_us", "fdatasync_p50_us"]),
        Smoke(arguments: ["reload", "--seconds", "0.3", "--new-versions", "2"], keys: ["reloads_per_s", "steady_p99_ns", "storm_p99_ns"]),
        Smoke(arguments: ["classify", "--coins", "200", "--foreign", "200", "--slugs", "100"], keys: ["goals", "coins", "slugs"]),
        Smoke(arguments: ["isolation", "--readings", "200", "--paced", "20"], keys: ["in_process", "isolated", "added_p99_us"]),
        Smoke(arguments: ["footprint", "--runs", "1", "--events", "2000", "--coins", "200", "--idle-seconds", "1"],
              keys: ["startup_ready_ms_empty", "rss_mib_idle", "wakeups_per_s_idle"]),
        Smoke(arguments: ["bridge", "--seconds", "2", "--backlog", "50"], keys: ["lag_p99_us", "backlog_events_per_s"]),
        Smoke(arguments: ["fleet", "--cabinets", "5", "--interval", "1", "--seconds", "2", "--floor-rows", "500", "--pgbench-seconds", "1"],
              keys: ["ingest_events_per_s", "lag_p99_ms", "of_floor", "floor_rows_per_s", "unacked"]),
        Smoke(arguments: ["fleet", "--saturate", "--cabinets", "5", "--backlog", "1000", "--floor-rows", "500", "--pgbench-seconds", "1"],
              keys: ["ingest_events_per_s", "of_floor", "floor_rows_per_s", "drain_s", "missing"]),
    ]

    @Test("each subcommand runs to its end and its last line is its JSON", arguments: smokes)
    func smoke(_ smoke: Smoke) throws {
        let run = try TestSupport.run(["\(TestSupport.binDirectory)/coinmech-bench"] + smoke.arguments + ["--json"], timeout: 300)
        #expect(run.status == 0, "coinmech-bench \(smoke.testDescription): exit \(run.status): \(run.errors.suffix(2000))")
        let last = try #require(run.output.split(separator: "\n").last.map(String.init), "no output: \(run.errors.suffix(2000))")
        let parsed = try JSONSerialization.jsonObject(with: Data(last.utf8))
        let objects = (parsed as? [[String: Any]]) ?? [(parsed as? [String: Any]) ?? [:]]
        #expect(!objects.isEmpty && !objects[0].isEmpty, "not a JSON object or array of objects: \(last.prefix(300))")
        for object in objects {
            for key in smoke.keys { #expect(object[key] != nil, "no \(key) in \(last.prefix(300))") }
        }
        if smoke.arguments.starts(with: ["fleet", "--saturate"]) {
            // The whole backlog drained: every event stored, none missing.
            #expect((objects[0]["stored"] as? Int ?? 0) == 1000 && (objects[0]["missing"] as? Int ?? -1) == 0, "\(last)")
        } else if smoke.arguments[0] == "fleet" {
            // The fleet stored what the generator offered while measured: it ran, not just started.
            #expect((objects[0]["ingest_events_per_s"] as? Double ?? 0) > 0 && (objects[0]["acked"] as? Int ?? 0) > 0, "\(last)")
        }
    }

    @Test("every subcommand coinmech-bench has is smoked here or in FraudBenchSmokeTests")
    func everySubcommand() throws {
        let help = try TestSupport.run(["\(TestSupport.binDirectory)/coinmech-bench", "--help"], timeout: 30)
        #expect(help.status == 0)
        // A subcommand's line is indented by two spaces; its abstract's continued lines, by more.
        let listed = (help.output.components(separatedBy: "SUBCOMMANDS:").last ?? "").split(separator: "\n")
            .filter { $0.hasPrefix("  ") && !$0.hasPrefix("   ") && !$0.contains("See '") }
            .compactMap { $0.split(separator: " ").first.map(String.init) }
        #expect(listed.count >= 10, "subcommands read from --help: \(listed)")
        let smoked = Set(Self.smokes.map { $0.arguments[0] } + ["fraud"])
        #expect(Set(listed).subtracting(smoked).isEmpty, "benches with no short form in make test: \(Set(listed).subtracting(smoked).sorted())")
    }
}
