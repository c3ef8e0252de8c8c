import CoinFacts
import CoinMechSettings
import CoinSimCore
import Testing

@Suite("coinsim: a mech's bias, drift and the coins' mint spread (mech block)")
struct MechErrorsTests {
    private func parse(_ text: String) throws(SettingsError) -> Scenario {
        try Scenario.parse(SettingsTable.parse(text, file: "t.yaml"))
    }

    /// A scenario of quarters only, read without noise, so readings show the mech's errors alone.
    private let exact = "mix: {quarter: 1}\nnoise: {diameter: 0, weight: 0, thickness: 0}\n"

    @Test("a relative bias scales every reading; an absolute one adds to it")
    func bias() throws {
        let scenario = try parse(exact + "mech:\n  bias: {diameter: 0.01, weight: -0.02, thickness: {offset: 0.1, absolute: true}}\n")
        var generator = InsertionGenerator(scenario: scenario)
        let reading = generator.next()
        // US Mint: quarter 24.26 mm, 5.670 g, 1.75 mm.
        #expect(abs(reading.diameterMM - 24.26 * 1.01) < 1e-9)
        #expect(abs(reading.weightG - 5.670 * 0.98) < 1e-9)
        #expect(abs(reading.thicknessMM! - (1.75 + 0.1)) < 1e-9)
    }

    @Test("drift grows with the insertion number: per 1,000 insertions")
    func drift() throws {
        let scenario = try parse(exact + "mech:\n  bias: {weight: 0.01}\n  drift: {weight: 0.02}\n")
        var generator = InsertionGenerator(scenario: scenario)
        var readings: [Insertion] = []
        for _ in 0..<2000 { readings.append(generator.next()) }
        #expect(abs(readings[0].weightG - 5.670 * (1 + 0.01 + 0.02 * 1 / 1000)) < 1e-9)
        #expect(abs(readings[999].weightG - 5.670 * (1 + 0.01 + 0.02)) < 1e-9)
        #expect(abs(readings[1999].weightG - 5.670 * (1 + 0.01 + 0.04)) < 1e-9)
    }

    @Test("mint spread makes genuine coins vary by their tolerance read as ±3σ")
    func mintSpread() throws {
        let scenario = try parse("mix: {nickel: 1}\nnoise: {diameter: 0, weight: 0, thickness: 0}\nmech: {mint_spread: true}\n")
        var generator = InsertionGenerator(scenario: scenario)
        let weights = (0..<20_000).map { _ in generator.next().weightG }
        let mean = weights.reduce(0, +) / Double(weights.count)
        let sigma = (weights.reduce(0) { $0 + ($1 - mean) * ($1 - mean) } / Double(weights.count - 1)).squareRoot()
        // 31 U.S.C. § 5113(a): the nickel's weight may vary by 0.194 g; read as ±3σ.
        #expect(abs(mean - 5.000) < 0.002)
        #expect(abs(sigma - 0.194 / 3) < 0.002, "σ \(sigma)")
    }

    @Test("without a mech block a scenario plays exactly as before")
    func offByDefault() throws {
        let scenario = try parse("seed: 4\nothers: {slug: 0.2, foreign: 0.2}\n")
        #expect(scenario.mech == MechErrors())
        var generator = InsertionGenerator(scenario: scenario)
        var rng = SplitMix64(seed: 4)
        // The generator's own draws: kind, then (for a coin) noise on the nominal figures.
        for _ in 0..<200 {
            let insertion = generator.next()
            let roll = Double.random(in: 0..<1, using: &rng)
            if roll < 0.2 {
                #expect(insertion.kind == .slug)
                _ = (Double.random(in: 15...30, using: &rng), Double.random(in: 2...12, using: &rng), Double.random(in: 1.2...2.6, using: &rng))
                continue
            }
            let spec: CoinSpec
            if roll < 0.4 {
                spec = CoinTables.eur.randomElement(using: &rng)!
            } else {
                var pick = Double.random(in: 0..<4, using: &rng)
                var chosen = CoinTables.usd.last!
                for candidate in CoinTables.usd { if pick < 1 { chosen = candidate; break }; pick -= 1 }
                spec = chosen
            }
            // The default noise: 0.4 %, 0.6 %, 1 % of the nominal figure (Noise.apply's arithmetic).
            let d = spec.diameterMM + rng.gaussian() * (0.004 * spec.diameterMM)
            let w = spec.weightG + rng.gaussian() * (0.006 * spec.weightG)
            let t = (spec.thicknessMM ?? 1.8) + rng.gaussian() * (0.01 * (spec.thicknessMM ?? 1.8))
            #expect(insertion.diameterMM == d && insertion.weightG == w && insertion.thicknessMM == t)
        }
    }

    @Test("bad mech keys give errors that name the file, the line and the key", arguments: [
        ("mech:\n  bias: {weight: 0.5}\n", "t.yaml:2: key 'mech.bias.weight': a relative bias must be between -0.2 and 0.2"),
        ("mech:\n  bias:\n    diameter: {offset: 9, absolute: true}\n", "t.yaml:3: key 'mech.bias.diameter.offset': must be between -5 and 5 (mm or g)"),
        ("mech:\n  bias:\n    diameter: {absolute: true}\n", "t.yaml:3: key 'mech.bias.diameter.offset': is required"),
        ("mech:\n  drift: {weight: 0.5}\n", "t.yaml:2: key 'mech.drift.weight': drift per 1,000 insertions must be between -0.1 and 0.1"),
        ("mech:\n  drift: {mass: 0.01}\n", "t.yaml:2: key 'mech.drift.mass': unknown key (known here: diameter, thickness, weight)"),
        ("mech:\n  skew: 1\n", "t.yaml:2: key 'mech.skew': unknown key (known here: bias, drift, mint_spread)"),
        ("mech:\n  mint_spread: sometimes\n", "t.yaml:2: key 'mech.mint_spread': must be true or false, got 'sometimes'"),
    ])
    func badKeys(text: String, message: String) {
        do {
            _ = try parse(text)
            Issue.record("should have failed: \(message)")
        } catch {
            #expect(error.description == message)
        }
    }
}
