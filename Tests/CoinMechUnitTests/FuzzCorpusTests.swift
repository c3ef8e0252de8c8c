import CoinMechFleetFuzzTargets
import CoinMechFuzzTargets
import Foundation
import Testing

/// The committed fuzz corpus replayed through the fuzz targets (the same code `make fuzz` runs
/// under libFuzzer): a seed named `valid-*` must still be accepted and one named `bad-*` refused,
/// so the seeds keep meaning what their names say; every file under `Fuzz/regressions/` once
/// crashed a parser or broke a property, and must now pass through.
@Suite("Fuzz corpus and regressions replayed through the fuzz targets")
struct FuzzCorpusTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Fuzz").path

    static func files(_ directory: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).sorted().map { "\(directory)/\($0)" }
    }

    /// Every target of both fuzz binaries, by name.
    static let targets: [String: @Sendable ([UInt8]) -> Bool] = {
        var targets: [String: @Sendable ([UInt8]) -> Bool] = [:]
        for target in FuzzTarget.allCases { targets[target.rawValue] = { (bytes: [UInt8]) in target.run(bytes) } }
        for target in FleetFuzzTarget.allCases { targets[target.rawValue] = { (bytes: [UInt8]) in target.run(bytes) } }
        return targets
    }()

    @Test("seeds are valid or refused as named", arguments: Self.targets.keys.sorted())
    func seeds(target: String) throws {
        let run = try #require(Self.targets[target])
        let seeds = Self.files("\(Self.root)/corpus/\(target)")
        #expect(seeds.count >= 3)
        for path in seeds {
            let name = URL(fileURLWithPath: path).lastPathComponent
            let bytes = try #require(FileManager.default.contents(atPath: path))
            let accepted = run([UInt8](bytes))
            #expect(name.hasPrefix("valid-") || name.hasPrefix("bad-"), "seed \(name) says neither valid- nor bad-")
            #expect(accepted == name.hasPrefix("valid-"), "\(target) seed \(name): accepted \(accepted)")
        }
    }

    @Test("inputs that once failed a target now pass through it", arguments: Self.targets.keys.sorted())
    func regressions(target: String) throws {
        let run = try #require(Self.targets[target])
        for path in Self.files("\(Self.root)/regressions/\(target)") {
            _ = run([UInt8](try #require(FileManager.default.contents(atPath: path))))  // a crash or a failed property check stops the test run
        }
    }
}
