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

    @Test("seeds are valid or refused as named", arguments: FuzzTarget.allCases)
    func seeds(target: FuzzTarget) throws {
        let seeds = Self.files("\(Self.root)/corpus/\(target.rawValue)")
        #expect(seeds.count >= 3)
        for path in seeds {
            let name = URL(fileURLWithPath: path).lastPathComponent
            let bytes = try #require(FileManager.default.contents(atPath: path))
            let accepted = target.run([UInt8](bytes))
            #expect(name.hasPrefix("valid-") || name.hasPrefix("bad-"), "seed \(name) says neither valid- nor bad-")
            #expect(accepted == name.hasPrefix("valid-"), "\(target.rawValue) seed \(name): accepted \(accepted)")
        }
    }

    @Test("inputs that once failed a target now pass through it", arguments: FuzzTarget.allCases)
    func regressions(target: FuzzTarget) throws {
        for path in Self.files("\(Self.root)/regressions/\(target.rawValue)") {
            let bytes = try #require(FileManager.default.contents(atPath: path))
            target.run([UInt8](bytes))  // a crash or a failed property check stops the test run
        }
    }

    @Test("the fleet's payload seeds are valid or refused as named", arguments: FleetFuzzTarget.allCases)
    func fleetSeeds(target: FleetFuzzTarget) throws {
        let seeds = Self.files("\(Self.root)/corpus/\(target.rawValue)")
        #expect(seeds.count >= 3)
        for path in seeds {
            let name = URL(fileURLWithPath: path).lastPathComponent
            let bytes = try #require(FileManager.default.contents(atPath: path))
            #expect(target.run([UInt8](bytes)) == name.hasPrefix("valid-"), "\(target.rawValue) seed \(name)")
        }
        for path in Self.files("\(Self.root)/regressions/\(target.rawValue)") {
            target.run([UInt8](try #require(FileManager.default.contents(atPath: path))))
        }
    }
}
