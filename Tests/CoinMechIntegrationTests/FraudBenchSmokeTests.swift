@testable import CoinMechTestSupport
import Foundation
import Testing

/// `coinmech-bench fraud`'s short form: the bench's own code path (teaching, four coin-table
/// instances through dlopen, every attack class) on a few thousand attempts, so the tables in
/// docs/PERFORMANCE.md come from a bench that still runs. Its figures are the long form's to show
/// (`make bench-fraud`); here only what a few thousand attempts can tell.
@Suite("coinmech-bench fraud, short form", .serialized)
struct FraudBenchSmokeTests {
    @Test("every class of every currency at 2 % noise: none credited with the axis, most without it; its last line is the JSON the docs cite")
    func smoke() throws {
        let run = try TestSupport.run(["\(TestSupport.binDirectory)/coinmech-bench", "fraud", "--attempts", "1500", "--noise", "0.02",
                                       "--plugin-dir", TestSupport.binDirectory], timeout: 600)
        #expect(run.status == 0, "\(run.errors)")
        let last = try #require(run.output.split(separator: "\n").last.map(String.init))
        let summary = try #require(try JSONSerialization.jsonObject(with: Data(last.utf8)) as? [String: Any])
        for key in ["attempts_per_class", "credited_with_axis", "credited_without_axis", "genuine_returned_taught_pct",
                    "genuine_returned_nominal_pct", "wrong_denominations"] {
            #expect(summary[key] != nil, "no \(key) in \(last.prefix(200))")
        }
        #expect(summary["attempts_per_class"] as? Int == 1500)
        #expect(summary["credited_with_axis"] as? Int == 0)
        #expect(summary["wrong_denominations"] as? Int == 0)
        #expect((summary["credited_without_axis"] as? Int ?? 0) > 3 * 1500, "slugs made to a coin pass a validator of size and weight")
        #expect((summary["genuine_returned_taught_pct"] as? Double ?? 100) <= 1)
        #expect((summary["genuine_returned_nominal_pct"] as? Double ?? 100) <= 3)
        #expect(run.output.contains("steel_washer") && run.output.contains("random_slug"))
    }
}
