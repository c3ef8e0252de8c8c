import CoinMechHarness
import CoinFacts
import CoinMechCalibration
import CoinMechChain
import CoinMechPluginKit
import CoinMechPlugins
@testable import CoinMechTestSupport
import CoinSimCore
import Foundation
import Testing

/// A `coin-table` link loaded through the real loader (dlopen), deciding alone.
func coinTable(_ config: String) throws -> Chain {
    try TestSupport.chain([LinkSpec(name: "table", plugin: "coin-table", configJSON: config)])
}

@Suite("coin-table: noise-aware matching through the real plugin")
struct CoinTableMatchingTests {
    static let fifty = MintFigures.eur.first { $0.0 == "EUR_50c" }!
    static let euro = MintFigures.eur.first { $0.0 == "EUR_1" }!

    @Test("CoinTables holds the mints' published figures and tolerances")
    func mintFigures() throws {
        for currency in ["USD", "EUR", "GBP"] {
            let table = try #require(CoinTables.table(for: currency))
            #expect(table.map(\.code) == MintFigures.of(currency).map(\.0))
            for (spec, (code, diameter, weight, thickness)) in zip(table, MintFigures.of(currency)) {
                #expect(spec.code == code && spec.diameterMM == diameter && spec.weightG == weight && spec.thicknessMM == thickness, "\(code)")
            }
        }
        for (code, tolerance) in MintFigures.usdWeightTolerance {
            #expect(CoinTables.usd.first { $0.code == code }?.tolerance.weightG == tolerance)
        }
    }

    @Test("every coin at the mint's figures is accepted as itself, with and without thickness", arguments: ["USD", "EUR", "GBP"])
    func mintFiguresAccepted(currency: String) throws {
        let chain = try coinTable(#"{"currency":"\#(currency)"}"#)
        for (code, diameter, weight, thickness) in MintFigures.of(currency) {
            #expect(chain.decide(.coin(diameter, weight, thickness: thickness)).denomination?.code == code, "\(code)")
            #expect(chain.decide(.coin(diameter, weight)).denomination?.code == code, "\(code) without thickness")
        }
    }

    @Test("50c and €1 under realistic noise (0.6 % diameter, 2 % weight, 2 % thickness) are never credited as each other")
    func fiftyAndEuroNeverConfused() throws {
        let chain = try coinTable(#"{"currency":"EUR","sensor_noise":{"diameter":0.006,"weight":0.02,"thickness":0.02}}"#)
        for (coin, other, seed) in [(Self.fifty, Self.euro, UInt64(50)), (Self.euro, Self.fifty, 100)] {
            var credited = [String: Int]()
            for reading in noisyReadings(coin.1, coin.2, coin.3, count: 20_000, seed: seed, noise: (0.006, 0.02, 0.02)) {
                if let code = chain.decide(reading).denomination?.code { credited[code, default: 0] += 1 }
            }
            #expect(credited[other.0] == nil, "\(coin.0) credited as \(other.0) \(credited[other.0] ?? 0) times")
            // It still does its job: nearly every coin is credited as itself.
            #expect(credited[coin.0, default: 0] >= 19_600, "\(coin.0): \(credited)")
        }
    }

    @Test("a reading between 50c and €1 is returned as ambiguous, naming both; near one it is accepted as that one")
    func inBetweenIsAmbiguous() throws {
        let chain = try coinTable(#"{"currency":"EUR"}"#)
        let middle = Reading.coin((Self.fifty.1 + Self.euro.1) / 2, (Self.fifty.2 + Self.euro.2) / 2, thickness: (Self.fifty.3! + Self.euro.3!) / 2)
        let decision = chain.decide(middle)
        let rejection = try #require(decision.rejection)
        #expect(rejection.reason == "ambiguous")
        #expect(rejection.message.contains("EUR_50c") && rejection.message.contains("EUR_1"), "\(rejection.message)")
        #expect(decision.linkName == "table")
        // Without thickness too.
        #expect(chain.decide(.coin(middle.diameterMM!, middle.weightG!)).rejection?.reason == "ambiguous")
        // A quarter of the way from the 50c: still nearer by more than the margin.
        let nearFifty = Reading.coin(Self.fifty.1 - 0.25, Self.fifty.2 - 0.075, thickness: Self.fifty.3)
        #expect(chain.decide(nearFifty).denomination?.code == "EUR_50c")
        // Far from every coin: unrecognized, as before.
        #expect(chain.decide(.coin(40, 20)).rejection?.reason == "unrecognized")
    }

    @Test("the weight alone does not decide: a 50c's diameter with a €1's weight is a 50c")
    func diameterCarriesTheEvidence() throws {
        let chain = try coinTable(#"{"currency":"EUR"}"#)
        // 4 % lighter than a 50c is 1.6σ of a 2 % load cell; 1 mm off is 6.7σ of the diameter.
        #expect(chain.decide(.coin(Self.fifty.1, Self.euro.2, thickness: Self.fifty.3)).denomination?.code == "EUR_50c")
        #expect(chain.decide(.coin(Self.euro.1, Self.fifty.2, thickness: Self.euro.3)).denomination?.code == "EUR_1")
    }

    @Test("a GBP 20p is not credited as a USD nickel, which it matches in diameter and weight")
    func foreignCoinNotCredited() throws {
        let twenty = MintFigures.gbp.first { $0.0 == "GBP_20p" }!
        let nickel = MintFigures.usd.first { $0.0 == "nickel" }!
        let usd = try coinTable(#"{"currency":"USD"}"#)
        let unaware = try coinTable(#"{"currency":"USD","foreign":[]}"#)
        // A 20p read 0.08 mm thick: inside the nickel's window (3.6σ), nearer the 20p's (1.8σ).
        let reading = Reading.coin(twenty.1, twenty.2, thickness: twenty.3! + 0.08)
        #expect(unaware.decide(reading).denomination?.code == "nickel")  // what knowing the 20p prevents
        // The nickel is only exp((3.6² − 1.8²) / 2) ≈ 130 times less likely, short of the foreign
        // odds (300): returned as ambiguous. At the 20p's own figures it is plainly a 20p.
        #expect(usd.decide(reading).rejection?.reason == "ambiguous")
        #expect(usd.decide(.coin(twenty.1, twenty.2, thickness: twenty.3)).rejection?.reason == "unrecognized")
        #expect(try coinTable(#"{"currency":"USD","foreign_odds":100}"#).decide(reading).rejection?.reason == "unrecognized")
        // Between them: returned as ambiguous, naming both.
        let between = usd.decide(.coin((twenty.1 + nickel.1) / 2, 5.0, thickness: (twenty.3! + nickel.3!) / 2))
        #expect(between.rejection?.reason == "ambiguous")
        #expect(between.rejection?.message == "could be nickel or GBP_20p: too close to both to tell, returned")
        // Only thickness tells them apart: without one, the 20p is not scored and a nickel is a nickel.
        #expect(usd.decide(.coin(nickel.1, nickel.2)).denomination?.code == "nickel")
        #expect(usd.decide(.coin(nickel.1, nickel.2, thickness: nickel.3)).denomination?.code == "nickel")
        // Nearest a foreign coin: passed on, so a GBP link after it can take it.
        let both = try TestSupport.chain([
            LinkSpec(name: "usd", plugin: "coin-table", configJSON: #"{"currency":"USD"}"#),
            LinkSpec(name: "gbp", plugin: "coin-table", configJSON: #"{"currency":"GBP"}"#),
        ])
        let twentyWithThickness = both.decide(.coin(twenty.1, twenty.2, thickness: twenty.3))
        #expect(twentyWithThickness.denomination?.code == "GBP_20p")
        #expect(twentyWithThickness.linkName == "gbp")
    }

    @Test("windows taught on a biased mech accept what nominal windows return, and credit nothing wrongly")
    func taughtWindows() throws {
        let noise = (0.006, 0.02, 0.02)
        // The diameter sensor reads 1.5 % large: 2.5σ of its noise, every coin.
        let bias = (0.015, 0.0, 0.0)
        var taught: [String: CoinCalibration.TaughtCoin] = [:]
        for (index, coin) in MintFigures.eur.enumerated() {
            let samples = noisyReadings(coin.1, coin.2, coin.3, count: 40, seed: 1_000 + UInt64(index), noise: noise, bias: bias)
            taught[coin.0] = try CoinCalibration.TaughtCoin.fit(samples.map { ($0.diameterMM!, $0.weightG!, $0.thicknessMM) })
        }
        let calibration = CoinCalibration(currency: "EUR", mech: "test", denominations: taught)
        let sensor = #""sensor_noise":{"diameter":0.006,"weight":0.02,"thickness":0.02}"#
        // Nominal windows held still, and nominal windows following the drift (the default).
        let nominal = try coinTable(#"{"currency":"EUR",\#(sensor),"follow_drift":false}"#)
        let following = try coinTable(#"{"currency":"EUR",\#(sensor)}"#)
        let file = "\(TestSupport.temporaryDirectory("calibration"))/front.json"
        try calibration.jsonText.write(toFile: file, atomically: true, encoding: .utf8)
        let fromFile = try coinTable(#"{"currency":"EUR",\#(sensor),"calibration":"\#(file)"}"#)
        let inline = try coinTable(#"{"currency":"EUR",\#(sensor),"calibration":\#(calibration.jsonText)}"#)

        var right = ["nominal": 0, "following": 0, "file": 0, "inline": 0], wrong = ["nominal": 0, "following": 0, "file": 0, "inline": 0], total = 0
        // The denominations mixed, as coins come.
        let readings = MintFigures.eur.enumerated().map { index, coin in
            noisyReadings(coin.1, coin.2, coin.3, count: 2_000, seed: UInt64(index), noise: noise, bias: bias).map { (coin, $0) }
        }
        for position in 0..<2_000 {
            for (coin, reading) in readings.map({ $0[position] }) {
                total += 1
                for (name, chain) in [("nominal", nominal), ("following", following), ("file", fromFile), ("inline", inline)] {
                    guard let code = chain.decide(reading).denomination?.code else { continue }
                    if code == coin.0 { right[name, default: 0] += 1 } else { wrong[name, default: 0] += 1 }
                }
            }
        }
        // Nominal windows held still on this mech credit some €1 as 50c (read 0.35 mm large);
        // taught ones none, and nominal windows that follow the drift learn it from the coins.
        #expect(wrong["file"] == 0 && wrong["inline"] == 0 && wrong["following"] == 0, "\(wrong)")
        #expect(wrong["nominal"]! > 0, "\(wrong)")
        #expect(right["file"] == right["inline"])
        #expect(Double(right["file"]!) >= 0.99 * Double(total), "taught: \(right["file"]!) of \(total)")
        #expect(Double(right["following"]!) >= 0.99 * Double(total), "following: \(right["following"]!) of \(total)")
        #expect(Double(right["nominal"]!) <= 0.9 * Double(total), "nominal: \(right["nominal"]!) of \(total)")
    }

    @Test("on coinsim's eur-close mech (bias, drift, mint spread), taught windows return fewer genuine coins and credit none wrongly")
    func taughtOnSimulatedMech() throws {
        let scenario = try Scenario.load(path: "\(TestSupport.packageRoot)/Simulators/scenarios/eur-close.yaml")
        // Teaching at the start of the session, as teach mode would: 40 coins of each.
        var teachRng = SplitMix64(seed: 7)
        var taught: [String: CoinCalibration.TaughtCoin] = [:]
        for spec in CoinTables.eur where ["EUR_50c", "EUR_1"].contains(spec.code) {
            let samples = (0..<40).map { _ in InsertionGenerator.measure(.coin(spec), number: 1, scenario: scenario, rng: &teachRng) }
            taught[spec.code] = try CoinCalibration.TaughtCoin.fit(samples)
        }
        let sensor = #""sensor_noise":{"diameter":0.006,"weight":0.02,"thickness":0.02}"#
        let nominal = try coinTable(#"{"currency":"EUR",\#(sensor),"follow_drift":false}"#)
        let following = try coinTable(#"{"currency":"EUR",\#(sensor)}"#)
        let calibration = CoinCalibration(currency: "EUR", denominations: taught).jsonText
        let teachedTable = try coinTable(#"{"currency":"EUR",\#(sensor),"calibration":\#(calibration)}"#)
        var generator = InsertionGenerator(scenario: scenario)
        var returned = ["nominal": 0, "following": 0, "taught": 0], wrong = ["nominal": 0, "following": 0, "taught": 0], genuine = 0, foreignCredited = 0
        for _ in 0..<6_000 {
            let insertion = generator.next()
            let reading = Reading(deviceSeq: UInt64(insertion.number), diameterMM: insertion.diameterMM, weightG: insertion.weightG,
                                  thicknessMM: insertion.thicknessMM)
            for (name, chain) in [("nominal", nominal), ("following", following), ("taught", teachedTable)] {
                let code = chain.decide(reading).denomination?.code
                guard case .coin(let spec) = insertion.kind else {
                    if code != nil { foreignCredited += 1 }
                    continue
                }
                if code == nil { returned[name, default: 0] += 1 } else if code != spec.code { wrong[name, default: 0] += 1 }
            }
            if case .coin = insertion.kind { genuine += 1 }
        }
        #expect(genuine > 5_000)
        #expect(wrong == ["nominal": 0, "following": 0, "taught": 0])
        #expect(foreignCredited == 0)
        // The bias returns genuine coins from nominal windows (2.6 % here); teaching learns it
        // (0.8 %: the load cell's drift, 1.2 % by the 6,000th coin, is what is left).
        #expect(returned["taught"]! * 2 < returned["nominal"]!, "\(returned) of \(genuine)")
        #expect(Double(returned["taught"]!) < 0.015 * Double(genuine), "\(returned) of \(genuine)")
    }

    @Test("a calibration that cannot be right is a configuration error naming the key")
    func calibrationErrors() throws {
        func coin(samples: Int = 40, diameter: String = #"{"mean":24.25,"sigma":0.1}"#) -> String {
            #"{"samples":\#(samples),"diameter":\#(diameter),"weight":{"mean":7.8,"sigma":0.15}}"#
        }
        let cases: [(String, String)] = [
            (#"{"format":1,"currency":"GBP","denominations":{}}"#, "key 'calibration': taught for GBP, but this link is EUR"),
            (#"{"format":2,"currency":"EUR","denominations":{}}"#, "key 'calibration': format 2 where 1 was expected"),
            (#"{"format":1,"currency":"EUR","denominations":{"EUR_3":\#(coin())}}"#, "key 'calibration': unknown denomination 'EUR_3' for EUR"),
            (#"{"format":1,"currency":"EUR","denominations":{"EUR_50c":\#(coin(samples: 4))}}"#,
             "key 'calibration': EUR_50c was taught from 4 coins; at least 10 are needed"),
            (#"{"format":1,"currency":"EUR","denominations":{"EUR_50c":\#(coin(diameter: #"{"mean":30.0,"sigma":0.1}"#))}}"#,
             "key 'calibration': EUR_50c diameter mean 30.0 is 24 % from the mint's 24.25: taught with other coins?"),
            (#""relative/path.json""#, "key 'calibration': 'relative/path.json' must be an absolute path"),
        ]
        for (calibration, message) in cases {
            do {
                _ = try coinTable(#"{"currency":"EUR","calibration":\#(calibration)}"#)
                Issue.record("accepted: \(calibration)")
            } catch {
                #expect("\(error)".hasSuffix("create failed: \(message)"), "\(error)")
            }
        }
        let garbage = "\(TestSupport.temporaryDirectory("calibration"))/bad.json"
        try "{not json".write(toFile: garbage, atomically: true, encoding: .utf8)
        #expect(throws: ChainBuildError.self) { try coinTable(#"{"currency":"EUR","calibration":"\#(garbage)"}"#) }
    }

    @Test("a calibration file that does not exist yet means nominal windows and a warning")
    func missingCalibrationFile() throws {
        let path = "\(TestSupport.temporaryDirectory("calibration"))/not-taught-yet.json"
        var warnings: [String] = []
        let chain = try ChainBuilder(loader: TestSupport.loader()).build(
            generation: 1, links: [LinkSpec(name: "eur", plugin: "coin-table", configJSON: #"{"currency":"EUR","calibration":"\#(path)"}"#)]) {
            warnings.append($0)
        }
        #expect(warnings.contains("chain link 1 'eur': calibration \(path) does not exist yet: nominal windows until the mech is taught"))
        #expect(chain.decide(.coin(Self.fifty.1, Self.fifty.2)).denomination?.code == "EUR_50c")
    }

    @Test("configuration errors name the key; the keys of earlier configurations keep working")
    func configuration() throws {
        let cases: [(String, String)] = [
            (#"{"currency":"EUR","window":0.5}"#, "key 'window' must be between 1.0 and 10.0, got 0.5"),
            (#"{"currency":"EUR","margin":-1}"#, "key 'margin' must be between 0.0 and 10.0, got -1.0"),
            (#"{"currency":"EUR","sensor_noise":{"weight":0.9}}"#, "key 'sensor_noise.weight' must be between 0.0001 and 0.2, got 0.9"),
            (#"{"currency":"EUR","foreign":["XXX"]}"#, "key 'foreign': 'XXX' is not a built-in currency other than EUR (known: USD, EUR, GBP)"),
            (#"{"currency":"EUR","foreign":["EUR"]}"#, "key 'foreign': 'EUR' is not a built-in currency other than EUR (known: USD, EUR, GBP)"),
            (#"{"currency":"EUR","tolerances":{"EUR_50c":{"diameter":0.9}}}"#, "key 'tolerances.EUR_50c.diameter' must be between 0.001 and 0.5, got 0.9"),
            (#"{"currency":"EUR","noise":0.01}"#, "unknown key 'noise' (known: alloy, calibration, currency, denominations, follow_drift, foreign, foreign_odds, margin, max_drift, require_weight, sensor_noise, tolerance, tolerances, window)"),
            (#"{"currency":"EUR","max_drift":0.5}"#, "key 'max_drift' must be between 0.0 and 0.15, got 0.5"),
            (#"{"currency":"EUR","foreign_odds":0.5}"#, "key 'foreign_odds' must be between 1.0 and 1000000000000.0, got 0.5"),
        ]
        for (config, message) in cases {
            do {
                _ = try coinTable(config)
                Issue.record("accepted: \(config)")
            } catch {
                #expect("\(error)".hasSuffix("create failed: \(message)"), "\(error)")
            }
        }
        // `tolerance` is a hard limit: 3 % heavy is inside the σ-window but outside ±2 %.
        let quarter = MintFigures.usd.first { $0.0 == "quarter" }!
        let limited = try coinTable(#"{"currency":"USD","tolerance":0.02}"#)
        #expect(limited.decide(.coin(quarter.1, quarter.2 * 1.03)).rejection?.reason == "unrecognized")
        #expect(try coinTable(#"{"currency":"USD"}"#).decide(.coin(quarter.1, quarter.2 * 1.03)).denomination?.code == "quarter")
        #expect(limited.decide(.coin(quarter.1, quarter.2 * 1.015)).denomination?.code == "quarter")
        let perCoin = try coinTable(#"{"currency":"USD","tolerances":{"quarter":{"weight":0.02}}}"#)
        #expect(perCoin.decide(.coin(quarter.1, quarter.2 * 1.03)).rejection?.reason == "unrecognized")
        // Light-gate mechs: no weight, judged on diameter.
        let lightGate = try coinTable(#"{"currency":"USD","require_weight":false}"#)
        #expect(lightGate.decide(Reading(deviceSeq: 1, diameterMM: quarter.1)).denomination?.code == "quarter")
        #expect(try coinTable(#"{"currency":"USD"}"#).decide(Reading(deviceSeq: 1, diameterMM: quarter.1)).rejection?.reason == "unrecognized")
    }

    @Test("describe lists the windows in force, the foreign coins kept and the 50c / €1 overlap")
    func describe() throws {
        let chain = try coinTable(#"{"currency":"EUR"}"#)
        let description = try #require(chain.links[0].origin.description)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(description.utf8)) as? [String: Any])
        let windows = try #require(object["denominations"] as? [[String: Any]])
        #expect(windows.count == 8)
        let fifty = try #require(windows.first { $0["name"] as? String == "EUR_50c" })
        #expect((fifty["diameter"] as? [String: Double])?["mean"] == 24.25)
        #expect(fifty["origin"] as? String == "nominal")
        let foreign = try #require(object["foreign"] as? [[String: Any]])
        #expect(foreign.contains { $0["name"] as? String == "GBP_1" })
        #expect(!foreign.contains { $0["name"] as? String == "GBP_2" }, "a £2 (28.4 mm) comes near no euro coin")
        let warnings = PluginDescription.warnings(in: description)
        #expect(warnings.contains { $0.hasPrefix("windows of EUR_50c and EUR_1 overlap") })
    }
}

@Suite("Explaining a reading: the optional explain function through the real loader")
struct ExplainTests {
    @Test("coin-table explains each nearby candidate's distance and the decision")
    func coinTableExplains() throws {
        let chain = try TestSupport.chain([LinkSpec(plugin: "sanity"), LinkSpec(name: "eur", plugin: "coin-table", configJSON: #"{"currency":"EUR"}"#)])
        let table = try #require(chain.links[1].validator as? PluginInstance)
        let json = try #require(table.explain(.coin(23.75, 7.65, thickness: 2.355)))
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
        #expect(object["decision"] as? String == "ambiguous")
        let candidates = try #require(object["candidates"] as? [[String: Any]])
        #expect(Set(candidates.prefix(2).compactMap { $0["code"] as? String }) == ["EUR_50c", "EUR_1"])
        // The distances are the normalised ones: both inside the 4σ window, within 1.5σ of each other.
        let distances = candidates.prefix(2).compactMap { $0["distance"] as? Double }
        #expect(distances.count == 2 && distances.allSatisfy { $0 < 4 } && abs(distances[0] - distances[1]) < 1.5)

        let explanation = ReadingExplanation(reading: .coin(23.75, 7.65, thickness: 2.355), chain: chain)
        #expect(explanation.decidedBy == "eur")
        #expect(explanation.verdict == .reject(Rejection(reason: "ambiguous", message: "could be EUR_50c or EUR_1: too close to both to tell, returned")))
        #expect(explanation.links.map(\.verdict.isPass) == [true, false])
        #expect(explanation.links[0].details.isEmpty)  // sanity has no explain function
        #expect(explanation.text.contains("2 eur (coin-table 2.2.0): reject ambiguous: could be EUR_50c or EUR_1"))
        #expect(explanation.text.hasSuffix("decision: reject (ambiguous) by eur"))
    }

    @Test("a plain C plugin without an explain function: no details, and its verdict still shows")
    func pluginWithoutExplain() throws {
        let chain = try TestSupport.chain([LinkSpec(plugin: "weight-floor", configJSON: #"{"min_weight_g": 3.0}"#)])
        let instance = try #require(chain.links[0].validator as? PluginInstance)
        #expect(instance.explain(.coin(19.05, 2.5)) == nil)
        let explanation = ReadingExplanation(reading: .coin(19.05, 2.5), chain: chain)
        #expect(explanation.verdict.rejectionReason == "too_light")
        #expect(explanation.text.contains("1 weight-floor (weight-floor 2.0.0): reject too_light"))
    }

    @Test("coinmechd --explain-reading prints every link's verdict; bad figures are refused")
    func daemonOption() throws {
        let dir = TestSupport.temporaryDirectory("explain")
        try """
            source: {kind: serial, device: mech}
            state_dir: state
            runtime_dir: run
            cache_dir: cache
            chain:
              - plugin: sanity
              - name: eur
                plugin: coin-table
                config: {currency: EUR}
            """.write(toFile: "\(dir)/coinmechd.yaml", atomically: true, encoding: .utf8)
        let run = { (figures: String) throws -> (Int32?, String, String) in
            let daemon = try ChildProcess("coinmechd", ["--config", "\(dir)/coinmechd.yaml", "--plugin-dir", TestSupport.binDirectory, "--explain-reading", figures])
            var out: [String] = []
            while let line = daemon.readLine() { out.append(line) }
            return (daemon.wait(timeout: 20), out.joined(separator: "\n"), daemon.stderr)
        }
        let (status, out, _) = try run("23.75,7.65,2.355")
        #expect(status == 0)
        #expect(out.hasPrefix("reading: diameter 23.75 mm, weight 7.65 g, thickness 2.355 mm\n1 sanity (sanity 2.0.0): pass\n2 eur (coin-table 2.2.0): reject ambiguous"))
        #expect(out.contains("    EUR_50c "))
        #expect(out.hasSuffix("decision: reject (ambiguous) by eur"))
        let (accepted, acceptOut, _) = try run("24.25,7.8")
        #expect(accepted == 0 && acceptOut.hasSuffix("decision: accept EUR EUR_50c (50) by eur"))
        // The alloy's figures after the size's: read and shown, whatever the chain makes of them.
        let (alloyStatus, alloyOut, _) = try run("23.75,7.65,2.355,9.5,9.8,1.02")
        #expect(alloyStatus == 0 && alloyOut.hasPrefix("reading: diameter 23.75 mm, weight 7.65 g, thickness 2.355 mm, conductivity 9.5 / 9.8 % IACS, permeability 1.02\n"), "\(alloyOut)")
        let (bad, _, stderr) = try run("24.25")
        #expect(bad == 1)
        #expect(stderr == "coinmechd: --explain-reading: '24.25' is not DIAMETER,WEIGHT[,THICKNESS[,LOW,HIGH[,PERMEABILITY]]]: mm, g, mm, then the alloy's conductivity in % IACS at the low and the high frequency and its relative permeability (e.g. 23.8,7.62,2.36)\n")
    }
}

extension LinkVerdict {
    var isPass: Bool { self == .pass }
}

extension Verdict {
    var rejectionReason: String? {
        if case .reject(let rejection) = self { return rejection.reason }
        return nil
    }
}
