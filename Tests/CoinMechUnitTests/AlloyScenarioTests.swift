import CoinFacts
import CoinMechSettings
import CoinSimCore
import Testing

@Suite("coinsim: the alloy block and the frauds (others.*) of a scenario")
struct AlloyScenarioTests {
    private func parse(_ text: String) throws(SettingsError) -> Scenario {
        try Scenario.parse(SettingsTable.parse(text, file: "t.yaml"))
    }

    @Test("the alloy block and the fraud shares parse; a scenario without them sends no alloy axis")
    func parsing() throws {
        let scenario = try parse("""
            currency: EUR
            alloy: {frequencies_hz: [50000, 2000000], noise: 0.02, permeability: false, temperature_c: 25, bias: {low: 0.01}}
            others: {twin: 0.1, brass_slug: 0.05, shaved: 0.02}
            """)
        let alloy = try #require(scenario.alloy)
        #expect(alloy.sensor.lowHz == 50_000 && alloy.sensor.highHz == 2_000_000 && alloy.noise == 0.02 && !alloy.measuresPermeability)
        #expect(alloy.temperatureCelsius == 25 && alloy.lowBias == 0.01 && alloy.highBias == 0)
        #expect(scenario.twinFraction == 0.1 && scenario.fraudFractions[.brassSlug] == 0.05 && scenario.fraudFractions[.shaved] == 0.02)
        var generator = InsertionGenerator(scenario: scenario)
        #expect((0..<200).allSatisfy { _ in let insertion = generator.next(); return insertion.alloy != nil && insertion.alloy?.permeability == nil })
        var plain = InsertionGenerator(scenario: try parse("currency: EUR\n"))
        #expect(plain.next().alloy == nil)
    }

    @Test("bad alloy settings and fraud shares are refused, naming the key", arguments: [
        ("alloy: {frequencies_hz: [1000000, 60000]}", "t.yaml:1: key 'alloy.frequencies_hz': must be two frequencies in Hz, low then high, between 1 kHz and 20 MHz"),
        ("alloy: {noise: 0.5}", "t.yaml:1: key 'alloy.noise': relative σ must be between 0 and 0.2"),
        ("alloy: {colour: red}", "unknown"),
        ("others: {lead_slug: 1.5}", "t.yaml:1: key 'others.lead_slug': must be a fraction between 0 and 1"),
        ("others: {twin: 0.6, steel_washer: 0.6}", "t.yaml:1: key 'others': fractions add up to more than 1"),
    ])
    func refused(text: String, message: String) {
        do {
            _ = try parse(text)
            Issue.record("accepted \(text)")
        } catch {
            #expect("\(error)".contains(message), "\(error)")
        }
    }

    @Test("the alloy's draws are a stream of their own: the same diameters, weights and thicknesses with the sensor as without")
    func sameGeometry() throws {
        let base = "currency: USD\nseed: 9\nmech: {mint_spread: true}\nothers: {slug: 0.1, foreign: 0.1}\n"
        var with = InsertionGenerator(scenario: try parse(base + "alloy: {noise: 0.02}\n"))
        var without = InsertionGenerator(scenario: try parse(base))
        for _ in 0..<300 {
            let a = with.next(), b = without.next()
            #expect(a.kind == b.kind && a.diameterMM == b.diameterMM && a.weightG == b.weightG && a.thicknessMM == b.thicknessMM)
        }
    }

    @Test("every kind of fraud is fed, none creditable, each named in the truth's terms")
    func frauds() throws {
        let scenario = try parse("""
            currency: GBP
            alloy: {}
            others: {twin: 0.15, steel_washer: 0.1, brass_slug: 0.1, lead_slug: 0.1, plated_copy: 0.1, shaved: 0.1}
            """)
        var generator = InsertionGenerator(scenario: scenario)
        var kinds: Set<String> = []
        for _ in 0..<2000 {
            let insertion = generator.next()
            if case .coin = insertion.kind { continue }
            #expect(insertion.kind.creditableValue == nil)
            kinds.insert(String(insertion.kind.description.split(separator: ":").prefix(2).joined(separator: ":")))
        }
        // GBP's twins are the US 5¢ and quarter (`WorldCoins.twins`).
        #expect(kinds == ["fraud:steel_washer", "fraud:brass_slug", "fraud:lead_slug", "fraud:plated_copy", "fraud:shaved", "foreign:nickel", "foreign:quarter"],
                "\(kinds)")
    }
}
