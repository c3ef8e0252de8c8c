import CoinFacts
import CoinMechEddyCurrent
import CoinMechModel
import CoinSimCore
import Testing

/// coinsim's alloy axis held to the sources, not to anything coin-table keeps: the handbooks'
/// conductivities and temperature coefficients and the mints' compositions, restated here from
/// the sources (the figures are typed in from them), and the physics' own limits (a field that
/// crosses a coin weighs its layers by thickness; one that stays near the face sees the face).
@Suite("coinsim measures the alloy from layers and skin depth, true to the handbooks and the mints")
struct AlloyPhysicsTests {
    /// IEC 60028: 100 % IACS is 1/1.7241 µΩ·cm; copper's coefficient 0.00393 per K.
    static func iacs(microhmCentimetres rho: Double) -> Double { 172.41 / rho }

    /// Nordheim's rule for Cu–Ni through the CDA's 70-30 (34 µΩ·cm), at `nickel` weight %.
    static func cuproNickel(_ nickel: Double) -> Double {
        func x(_ w: Double) -> Double { (w / 58.693) / (w / 58.693 + (100 - w) / 63.546) }
        let scale = (34 - 1.7241) / (x(30) * (1 - x(30)))
        return iacs(microhmCentimetres: 1.7241 + scale * x(nickel) * (1 - x(nickel)))
    }

    /// What coinsim's mech reads of `kind` with no noise, no spread, at `celsius`, converting at the true thickness.
    static func read(_ kind: CoinKind, thickness: Double, diameter: Double = 24, sensor: EddyCurrentSensor = .reference, celsius: Double = 20) -> AlloySignature {
        var settings = AlloySensorSettings()
        settings.sensor = sensor
        settings.noise = 0
        settings.temperatureCelsius = celsius
        var rng = SplitMix64(seed: 1)
        return AlloyReading.measure(kind, truth: (diameter, 5, thickness), measuredDiameterMM: diameter, measuredThicknessMM: thickness, number: 1,
                                    sensor: settings, spread: false, rng: &rng)!
    }

    static func coin(_ currency: String, _ code: String) -> CoinSpec { CoinTables.table(for: currency)!.first { $0.code == code }! }

    @Test("a solid coin reads its alloy's handbook conductivity at both frequencies")
    func solidCoins() {
        // US 5¢ (US Mint: 75/25 cupro-nickel), GBP 20p (Royal Mint: 84/16), GBP 50p (75/25).
        for (spec, expected) in [(Self.coin("USD", "nickel"), Self.cuproNickel(25)), (Self.coin("GBP", "GBP_20p"), Self.cuproNickel(16)),
                                 (Self.coin("GBP", "GBP_50p"), Self.cuproNickel(25))] {
            let read = Self.read(.coin(spec), thickness: spec.thicknessMM!)
            #expect(abs(read.lowIACS / expected - 1) < 0.002, "\(spec.code) low \(read.lowIACS) vs \(expected)")
            #expect(abs(read.highIACS / expected - 1) < 0.002, "\(spec.code) high \(read.highIACS) vs \(expected)")
            #expect(abs(read.permeability! - 1) < 1e-9)
        }
        #expect(abs(Self.cuproNickel(25) - 5.60) < 0.01 && abs(Self.cuproNickel(16) - 7.55) < 0.01)
        // A brass slug: CDA C26000, 28 % IACS. A lead one: CRC, 20.8 µΩ·cm.
        let quarter = Self.coin("USD", "quarter")
        let brass = FraudItem(attack: .brassSlug, target: quarter, diameterMM: 24.26, weightG: 5.67, thicknessMM: 1.75, construction: .solid(Materials.brass))
        #expect(abs(Self.read(.fraud(brass), thickness: 1.75).highIACS - 28) < 0.05)
        let lead = FraudItem(attack: .leadSlug, target: quarter, diameterMM: 24.26, weightG: 5.67, thicknessMM: 1.75, construction: .solid(Materials.lead))
        #expect(abs(Self.read(.fraud(lead), thickness: 1.75).lowIACS - Self.iacs(microhmCentimetres: 20.8)) < 0.02)
    }

    @Test("a clad quarter: at a low frequency the thickness-weighted mean of its layers, at a high one its cladding")
    func cladQuarter() {
        // US Mint: 8.33 % Ni overall from 75/25 cladding on pure copper: the cladding is 1/3 of the coin.
        let cladding = 8.33 / 25, mean = (1 - cladding) * 100 + cladding * Self.cuproNickel(25)
        let quarter = Self.coin("USD", "quarter")
        let crossed = Self.read(.coin(quarter), thickness: 1.75, sensor: EddyCurrentSensor(lowHz: 5, highHz: 100_000_000))
        #expect(abs(crossed.lowIACS / mean - 1) < 0.002, "\(crossed.lowIACS) vs \(mean)")
        #expect(abs(crossed.highIACS / Self.cuproNickel(25) - 1) < 0.002, "\(crossed.highIACS)")
        // At the reference pair the two differ by an order of magnitude: the clad coin gives itself away.
        let reference = Self.read(.coin(quarter), thickness: 1.75)
        #expect(reference.lowIACS > 5 * reference.highIACS)
    }

    @Test("a plated cent: zinc with its copper skin at a low frequency, copper at a very high one")
    func platedCent() {
        // US Mint: 2.5 % Cu overall, core 99.2 % Zn / 0.8 % Cu; CRC densities 8.96, 7.14; zinc 5.90 µΩ·cm.
        let platingMass = (0.025 - 0.008) / 0.992
        let copperVolume = (platingMass / 8.96) / (platingMass / 8.96 + (1 - platingMass) / 7.14)
        let mean = copperVolume * 100 + (1 - copperVolume) * Self.iacs(microhmCentimetres: 5.90)
        let cent = Self.coin("USD", "cent")
        let read = Self.read(.coin(cent), thickness: 1.52, sensor: EddyCurrentSensor(lowHz: 5, highHz: 1_000_000_000))
        #expect(abs(read.lowIACS / mean - 1) < 0.002, "\(read.lowIACS) vs \(mean)")
        #expect(abs(read.highIACS / 100 - 1) < 0.01, "\(read.highIACS)")
    }

    @Test("temperature: copper falls 0.393 % a kelvin, cupro-nickel barely moves, as Matthiessen's rule says")
    func temperature() {
        let cent = Self.coin("USD", "cent"), nickel = Self.coin("USD", "nickel")
        let sensor = EddyCurrentSensor(lowHz: 60_000, highHz: 1_000_000_000)
        let copper20 = Self.read(.coin(cent), thickness: 1.52, sensor: sensor).highIACS
        let copper30 = Self.read(.coin(cent), thickness: 1.52, sensor: sensor, celsius: 30).highIACS
        #expect(abs(copper30 / copper20 - 1 / (1 + 0.00393 * 10)) < 0.002)
        let alpha = 0.00393 * 1.7241 / (172.41 / Self.cuproNickel(25))
        let cn20 = Self.read(.coin(nickel), thickness: 1.95).lowIACS, cn30 = Self.read(.coin(nickel), thickness: 1.95, celsius: 30).lowIACS
        #expect(abs(cn30 / cn20 - 1 / (1 + alpha * 10)) < 1e-4)
        #expect(abs(cn30 / cn20 - 1) < 0.003)
    }

    @Test("magnetism: steel, nickel and the Canadian quarter's plies by volume; the skin depth as the textbook gives it")
    func magnetism() {
        // Royal Canadian Mint: 94 % steel, 3.8 % Cu, 2.2 % Ni by mass; densities 7.85, 8.96, 8.90 (CRC).
        let volumes = (steel: 0.94 / 7.85, copper: 0.038 / 8.96, nickel: 0.022 / 8.90)
        let total = volumes.steel + volumes.copper + volumes.nickel
        let expected = (volumes.steel * 200 + volumes.copper * 1 + volumes.nickel * 110) / total
        let read = Self.read(.foreign(WorldCoins.cad25), thickness: 1.58)
        #expect(abs(read.permeability! / expected - 1) < 0.002, "\(read.permeability!) vs \(expected)")
        // The €2's centre has a nickel core: weakly magnetic, where the Thai 10 baht is not at all.
        #expect(Self.read(.coin(Self.coin("EUR", "EUR_2")), thickness: 2.2).permeability! > 10)
        #expect(abs(Self.read(.foreign(WorldCoins.thb10), thickness: 2.15).permeability! - 1) < 1e-9)
        // δ = 1/√(π f μ σ): copper at 1 MHz, 66.1 µm.
        let copper = SurfaceImpedance.Layer(conductivity: 58e6, permeability: 1, thickness: 0.001)
        #expect(abs(copper.skinDepth(hz: 1_000_000) * 1e6 - 66.08) < 0.05)
    }

    @Test("the firmware's conversion: a plain plate reads back its own conductivity, at any thickness and frequency")
    func inversion() {
        for iacs in [0.5, 5.6, 13.25, 28, 100] {
            for thickness in [0.5, 1.5, 2.5] {
                for hz in [1_000.0, 60_000, 1_000_000, 10_000_000] {
                    let plate = SurfaceImpedance.Layer(conductivity: iacs / 100 * 58e6, permeability: 1, thickness: thickness / 1000)
                    let r = SurfaceImpedance.of([plate], hz: hz).real
                    let back = ApparentConductivity.iacs(resistance: r, thicknessMM: thickness, hz: hz)
                    #expect(abs(back / iacs - 1) < 1e-6, "\(iacs) % IACS, \(thickness) mm, \(hz) Hz: \(back)")
                }
            }
        }
    }

    @Test("frauds are made to the coin: a sized washer or slug weighs what its target weighs")
    func frauds() {
        for currency in ["USD", "EUR", "GBP"] {
            for attack in [FraudItem.Attack.steelWasher, .brassSlug, .leadSlug] {
                for item in FraudItem.all(attack, currency: currency) {
                    #expect(abs(item.diameterMM - item.target.diameterMM) < 1e-9)
                    #expect(abs(item.weightG / item.target.weightG - 1) < 0.01, "\(item)")
                }
            }
            // No copy of a coin that is itself plated steel; every other coin has one.
            let copies = FraudItem.all(.platedCopy, currency: currency).map(\.target.code)
            #expect(!copies.contains("EUR_1c") && !copies.contains("GBP_10p"))
            #expect(!copies.isEmpty)
            #expect(!FraudItem.all(.shaved, currency: currency).isEmpty)
        }
    }
}
