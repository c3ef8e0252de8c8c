@testable import CoinMechTestSupport
import Foundation
import Testing

/// scripts/with-scratch, which every test target of the Makefile runs through: a passing run
/// leaves nothing behind, a failing one keeps all it made and says where.
@Suite struct ScratchDirectoryTests {
    private let script = "\(TestSupport.packageRoot)/scripts/with-scratch"

    /// The entries of `root` (the run's own scratch directories among them).
    private func entries(_ root: String) throws -> Set<String> {
        Set(try FileManager.default.contentsOfDirectory(atPath: root))
    }

    @Test func aPassingRunLeavesNothing() throws {
        let root = TestSupport.temporaryDirectory("scratch-root")
        defer { try? FileManager.default.removeItem(atPath: root) }
        // What a test does: a directory of its own under TMPDIR, with a file in it.
        // The run's TMPDIR must be a fresh directory under the root, or the removal proves nothing;
        // and open to every user, as /tmp is (PostgreSQL makes its directories there as postgres).
        let run = try TestSupport.run([
            script, root, "sh", "-c", #"d=$(mktemp -d) && echo ledger > "$d/coins" && test "${d#"$1"/coinmech-scratch-}" != "$d" && test "$(stat -c %a "$TMPDIR")" = 1777"#, "sh", root,
        ])
        #expect(run.status == 0, "with-scratch: \(run.errors)")
        let left = try entries(root)
        #expect(left.isEmpty, "a passing run left \(left) in \(root)")
    }

    @Test func aFailingRunKeepsItsScratchAndSaysWhere() throws {
        let root = TestSupport.temporaryDirectory("scratch-root")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let run = try TestSupport.run([script, root, "sh", "-c", #"echo ledger > "$(mktemp -d)/coins"; exit 3"#])
        #expect(run.status == 3, "the command's own status is the run's")
        let kept = try entries(root)
        #expect(kept.count == 1)
        let scratch = try #require(kept.first)
        #expect(run.errors.contains("\(root)/\(scratch)"), "the kept directory is named: \(run.errors)")
        let made = try FileManager.default.contentsOfDirectory(atPath: "\(root)/\(scratch)")
        #expect(made.count == 1, "what the failing run made is still there")
    }

    @Test func aRootThatIsNotADirectoryIsRefusedClearly() throws {
        let run = try TestSupport.run([script, "/nonexistent/coinmech", "true"])
        #expect(run.status == 2)
        #expect(run.errors.contains("/nonexistent/coinmech is not a writable directory"))
    }

    /// Every test target of the Makefile runs through it; one added without it would fill tmpfs again.
    @Test func everyTestRecipeRunsThroughIt() throws {
        let makefile = try String(contentsOfFile: "\(TestSupport.packageRoot)/Makefile", encoding: .utf8)
        let recipes = makefile.split(separator: "\n").filter {
            $0.hasPrefix("\t") && ($0.contains(" test --skip-build") || $0.contains("/coinmech-crash ")
                || $0.contains("/coinmech-bridge-chaos ") || $0.contains("/coinmech-fleet-chaos ") || $0.contains("/coinmech-soak "))
        }
        #expect(recipes.count >= 7)
        for recipe in recipes {
            #expect(recipe.contains("$(SCRATCH) "), "a test recipe without scripts/with-scratch: \(recipe)")
        }
    }
}
