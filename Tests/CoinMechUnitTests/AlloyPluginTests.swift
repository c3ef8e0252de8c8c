import CoinFacts
import CoinMechCalibration
import CoinMechChain
import CoinMechEddyCurrent
import CoinMechPluginABI
import CoinMechPlugins
@testable import CoinMechTestSupport
import Foundation
import Testing

/// coin-table on the alloy axis, and the plugin ABI that carries it: through the real loader.
@Suite("coin-table judges the alloy axis; ABI 2.1 carries it, size-checked, and old plugins keep deciding")
struct AlloyPluginTests {
    static func spec(_ currency: String, _ code: String) -> CoinSpec { CoinTables.table(for: currency)!.first { $0.code == code }! }

    /// A reading of `spec`'s nominal figures with the alloy axis of `construction` as the reference sensor reads it.
    static func reading(_ spec: CoinSpec, _ construction: CoinConstruction, seq: UInt64 = 1, scale: Double = 1) -> Reading {
        let thickness = spec.thicknessMM ?? 1.8
        let signature = EddyCurrentSensor.reference.signature(of: construction, diameterMM: spec.diameterMM, thicknessMM: thickness,
                                                              measuredThicknessMM: thickness)
        return Reading(deviceSeq: seq, diameterMM: spec.diameterMM, weightG: spec.weightG, thicknessMM: spec.thicknessMM.map { _ in thickness },
                       alloy: Reading.Alloy(lowIACS: signature.lowIACS * scale, highIACS: signature.highIACS * scale, permeability: signature.permeability))
    }

    static func chain(_ currency: String, extra: String = "") throws -> Chain {
        try TestSupport.chain([LinkSpec(name: currency.lowercased(), plugin: "coin-table", configJSON: #"{"currency":"\#(currency)"\#(extra)}"#)])
    }

    static func reason(_ decision: Decision) -> String? {
        if case .reject(let rejection) = decision.verdict { return rejection.reason }
        return nil
    }

    @Test("every composition of every coin, read nominally with its alloy, is credited as itself", arguments: ["USD", "EUR", "GBP"])
    func genuine(currency: String) throws {
        let chain = try Self.chain(currency)
        for spec in CoinTables.table(for: currency)! {
            for variant in CoinCompositions.variants(of: spec)! {
                let decision = chain.decide(Self.reading(spec, variant.construction))
                guard case .accept(let denomination) = decision.verdict else {
                    Issue.record("\(spec.code) (\(variant.name)): \(decision.verdict)")
                    continue
                }
                #expect(denomination.code == spec.code)
            }
        }
    }

    @Test("made to a coin's size and weight, not of its metal: returned as wrong_alloy, or passed as a foreign coin")
    func frauds() throws {
        let usd = try Self.chain("USD"), eur = try Self.chain("EUR")
        let quarter = Self.spec("USD", "quarter")
        for metal in [Materials.brass, Materials.lead, Materials.steel] {
            #expect(Self.reason(usd.decide(Self.reading(quarter, .solid(metal)))) == "wrong_alloy", "\(metal)")
        }
        // The Canadian quarter read as if it had the US quarter's size and weight: still not credited.
        let cad = CoinCompositions.variants(of: WorldCoins.cad25)![0].construction
        #expect(!usd.decide(Self.reading(quarter, cad)).isAccept)
        // The Thai 10 baht and the Turkish lira at the €2's size and weight.
        let two = Self.spec("EUR", "EUR_2")
        for twin in [WorldCoins.thb10, WorldCoins.try1] {
            let decision = eur.decide(Self.reading(two, CoinCompositions.variants(of: twin)![0].construction))
            #expect(!decision.isAccept, "\(twin.code): \(decision.verdict)")
        }
        // Without the axis, the brass slug is a quarter to any validator of size and weight.
        var plain = Self.reading(quarter, .solid(Materials.brass))
        plain.alloy = nil
        #expect(usd.decide(plain).isAccept)
    }

    @Test("figures no metal gives are never matched: returned with the field named", arguments: [
        (Reading.Alloy(lowIACS: .nan, highIACS: 6.5, permeability: 1), "bad_conductivity_low"),
        (Reading.Alloy(lowIACS: 70, highIACS: -1, permeability: 1), "bad_conductivity_high"),
        (Reading.Alloy(lowIACS: 70, highIACS: 151, permeability: 1), "bad_conductivity_high"),
        (Reading.Alloy(lowIACS: 70, highIACS: 6.5, permeability: 0), "bad_permeability"),
        (Reading.Alloy(lowIACS: .infinity, highIACS: 6.5, permeability: nil), "bad_conductivity_low"),
    ])
    func badFigures(alloy: Reading.Alloy, reason: String) throws {
        let chain = try Self.chain("USD")
        var reading = Self.reading(Self.spec("USD", "quarter"), CoinCompositions.variants(of: Self.spec("USD", "quarter"))![0].construction)
        reading.alloy = alloy
        #expect(Self.reason(chain.decide(reading)) == reason)
    }

    @Test("a reading as an ABI 2.0 host builds it (no alloy fields) is decided as one without the axis")
    func olderHost() throws {
        let chain = try Self.chain("USD")
        let quarter = Self.spec("USD", "quarter")
        let slug = Self.reading(quarter, .solid(Materials.brass))
        #expect(Self.reason(chain.decide(slug)) == "wrong_alloy")
        #expect(slug.asABI20.alloy == nil)
        #expect(chain.decide(slug.asABI20).isAccept)
    }

    @Test("an ABI 2.0 plugin loads and decides on this host; coin-table before it refuses the slug it would credit")
    func oldPlugin() throws {
        let directory = TestSupport.temporaryDirectory("old-plugin")
        _ = try TestSupport.compileFixture("abi20_quarter", into: directory, as: "libabi20-quarter.so", header: "abi-2.0")
        let loader = TestSupport.loader(directory: directory)
        let image = try PluginLoader.image(of: try loader.prepare(plugin: "abi20-quarter"))
        #expect(image.metadata.abiVersion == 0x0002_0000)
        #expect(image.metadata.readingKinds == COINMECH_KINDS_MEASURED)
        let quarter = Self.spec("USD", "quarter")
        let slug = Self.reading(quarter, .solid(Materials.brass))
        let alone = try ChainBuilder(loader: loader).build(generation: 1, links: [LinkSpec(name: "old", plugin: "abi20-quarter", configJSON: "{}")])
        #expect(alone.decide(slug).isAccept)
        #expect(alone.decide(slug.asABI20).isAccept)
        _ = try TestSupport.copyBuiltPlugin("coin-table", into: directory)
        let guarded = try ChainBuilder(loader: TestSupport.loader(directory: directory)).build(generation: 1, links: [
            LinkSpec(name: "usd", plugin: "coin-table", configJSON: #"{"currency":"USD"}"#),
            LinkSpec(name: "old", plugin: "abi20-quarter", configJSON: "{}"),
        ])
        #expect(Self.reason(guarded.decide(slug)) == "wrong_alloy")
        #expect(guarded.decide(Self.reading(quarter, CoinCompositions.variants(of: quarter)![0].construction)).isAccept)
    }

    @Test("the alloy kind: with measured readings and ABI 2.1 it loads; alone, or from an ABI 2.0 build, it is refused")
    func kinds() throws {
        let directory = TestSupport.temporaryDirectory("alloy-kinds")
        let loader = TestSupport.loader(directory: directory)
        _ = try TestSupport.compileFixture("alloy_kinds", into: directory, as: "libgood.so")
        let good = try PluginLoader.image(of: try loader.prepare(plugin: "good"))
        #expect(good.metadata.readingKinds == COINMECH_KINDS_MEASURED | COINMECH_KINDS_ALLOY)
        _ = try TestSupport.compileFixture("alloy_kinds", into: directory, as: "libalone.so", defines: ["KINDS=0x4u"])
        do {
            _ = try PluginLoader.image(of: try loader.prepare(plugin: "alone"))
            Issue.record("a plugin declaring the alloy axis alone loaded")
        } catch {
            #expect("\(error)".contains("COINMECH_KINDS_ALLOY without COINMECH_KINDS_MEASURED"))
        }
        _ = try TestSupport.compileFixture("alloy_kinds", into: directory, as: "libolder.so", defines: ["ABI=0x00020000u"])
        do {
            _ = try PluginLoader.image(of: try loader.prepare(plugin: "older"))
            Issue.record("an ABI 2.0 plugin declaring the alloy axis loaded")
        } catch {
            #expect("\(error)".contains("built for plugin ABI 2.0, whose reading has no alloy fields"))
        }
    }

    @Test("the alloy's drift is followed within its bound, and slugs at a window's edge teach it nothing")
    func drift() throws {
        let chain = try Self.chain("USD", extra: #","max_drift":0.05"#)
        let quarter = Self.spec("USD", "quarter")
        let construction = CoinCompositions.variants(of: quarter)![0].construction
        // A coil reading 3 % high: learnt. Then one reading 12 % high: followed to the bound only.
        for seq in 1...300 { #expect(chain.decide(Self.reading(quarter, construction, seq: UInt64(seq), scale: 1.03)).isAccept) }
        let instance = try #require(chain.links[0].validator as? PluginInstance)
        func drift() throws -> [String: Double] {
            let json = try #require(instance.explain(Self.reading(quarter, construction)))
            let object = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
            return try #require(object["drift"] as? [String: Double])
        }
        #expect(abs(try drift()["conductivity_low"]! - 0.03) < 0.005)
        // A coil wandering 2 % at a time up to 12 % high: followed, but never past the bound.
        var seq: UInt64 = 300
        for scale in [1.05, 1.07, 1.09, 1.11, 1.12] {
            for _ in 0..<300 {
                seq += 1
                _ = chain.decide(Self.reading(quarter, construction, seq: seq, scale: scale))
            }
        }
        let bounded = try drift()["conductivity_low"]!
        #expect(bounded <= 0.05 + 1e-9 && bounded > 0.045, "\(bounded)")
        // Slugs 20 % off the window's centre are credited by nothing and teach nothing.
        for _ in 0..<500 {
            seq += 1
            #expect(!chain.decide(Self.reading(quarter, construction, seq: seq, scale: 0.8)).isAccept)
        }
        #expect(try drift()["conductivity_low"]! == bounded)
    }
}
