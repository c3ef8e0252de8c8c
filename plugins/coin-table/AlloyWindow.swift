import CoinFacts
import CoinMechCalibration
import CoinMechEddyCurrent
import Foundation

/// Where one composition of a coin falls on the alloy axis of this mech: the conductivity at
/// each frequency (% IACS, mean and σ) and ln(permeability). A reading is scored against it
/// beside its diameter, weight and thickness.
struct AlloyWindow {
    /// The composition, for people ("nickel-plated steel (since 2012)", "taught 1 of 2").
    let name: String
    let origin: Candidate.Origin
    let low: CoinSpread.Axis
    let high: CoinSpread.Axis
    /// The centres a mech without a thickness sensor reads (it converts at 2 mm).
    let lowUnmeasured: Double
    let highUnmeasured: Double
    let logPermeability: CoinSpread.Axis
    /// How each frequency's reading moves per kelvin, relative (copper −0.4 %, cupro-nickel −0.02 %).
    let perKelvin: (low: Double, high: Double)

    /// A composition's nominal window from the physics of `EddyCurrentSensor`: the centre at the
    /// coin's nominal thickness and the middle of the cabinet's temperatures; the spread from the
    /// sensor's noise, the alloy's own (its composition tolerance, a steel's permeability), the
    /// diameter and thickness the firmware converts at (measured with `diameterNoise` and
    /// `thicknessNoise`, the coin within its mint tolerance) and the temperatures (uniform
    /// between the two).
    static func nominal(_ variant: CoinCompositions.Variant, of spec: CoinSpec, sensor: EddyCurrentSensor, noise: Double, diameterNoise: Double,
                        thicknessNoise: Double, temperatures: ClosedRange<Double>, origin: Candidate.Origin) -> AlloyWindow {
        let thickness = spec.thicknessMM ?? Self.unrecordedThicknessMM
        let celsius = (temperatures.lowerBound + temperatures.upperBound) / 2
        let c = variant.construction
        let d = spec.diameterMM
        let centre = sensor.signature(of: c, diameterMM: d, thicknessMM: thickness, measuredThicknessMM: thickness, celsius: celsius)
        let unmeasured = sensor.signature(of: c, diameterMM: d, thicknessMM: thickness, measuredThicknessMM: nil, celsius: celsius)
        let warmer = sensor.signature(of: c, diameterMM: d, thicknessMM: thickness, measuredThicknessMM: thickness, celsius: celsius + 1)
        let measuredThicker = sensor.signature(of: c, diameterMM: d, thicknessMM: thickness, measuredThicknessMM: thickness * 1.01, celsius: celsius)
        let thicker = sensor.signature(of: c, diameterMM: d, thicknessMM: thickness * 1.01, measuredThicknessMM: thickness * 1.01, celsius: celsius)
        let measuredWider = sensor.signature(of: c, diameterMM: d, thicknessMM: thickness, measuredDiameterMM: d * 1.01, measuredThicknessMM: thickness,
                                             celsius: celsius)
        // One σ of the metal's own spread: its conductivity, and a magnetic layer's permeability
        // (which moves a magnetic coin's conductivities too: its skin depth goes with 1/√μ).
        let otherAlloy = sensor.signature(of: c, diameterMM: d, thicknessMM: thickness, measuredThicknessMM: thickness, celsius: celsius,
                                          variation: .init(conductivity: 1 + Self.alloySpread))
        let otherSteel = sensor.signature(of: c, diameterMM: d, thicknessMM: thickness, measuredThicknessMM: thickness, celsius: celsius,
                                          variation: .init(permeability: 1 + Self.permeabilitySpread))
        // Relative sensitivities per kelvin and per 1 % of thickness.
        let kelvinSpread = (temperatures.upperBound - temperatures.lowerBound) / 12.squareRoot()
        let mintThickness = MintTolerance.assumedRelative.thickness / 3 * 100
        func axis(_ value: KeyPath<EddyCurrentSensor.Signature, Double>) -> CoinSpread.Axis {
            let mean = centre[keyPath: value]
            let perKelvin = warmer[keyPath: value] / mean - 1
            let perMeasuredPercent = measuredThicker[keyPath: value] / mean - 1
            let perTruePercent = thicker[keyPath: value] / mean - 1
            let metal = otherAlloy[keyPath: value] / mean - 1, steel = otherSteel[keyPath: value] / mean - 1
            let perWiderPercent = measuredWider[keyPath: value] / mean - 1
            let relative = (noise * noise + metal * metal + steel * steel + pow(perKelvin * kelvinSpread, 2) + pow(perWiderPercent * diameterNoise * 100, 2)
                + pow(perMeasuredPercent * thicknessNoise * 100, 2) + pow(perTruePercent * mintThickness, 2)).squareRoot()
            return CoinSpread.Axis(mean: mean, sigma: max(relative * mean, 1e-6))
        }
        let magnetic = centre.permeability > 1.05
        return AlloyWindow(
            name: variant.name, origin: origin, low: axis(\.lowIACS), high: axis(\.highIACS), lowUnmeasured: unmeasured.lowIACS,
            highUnmeasured: unmeasured.highIACS,
            logPermeability: CoinSpread.Axis(mean: log(centre.permeability),
                                             sigma: (noise * noise + (magnetic ? Self.permeabilitySpread * Self.permeabilitySpread : 0)).squareRoot()),
            perKelvin: (warmer.lowIACS / centre.lowIACS - 1, warmer.highIACS / centre.highIACS - 1))
    }

    /// A window teach mode measured, widened as coin-table widens taught geometry (by the σ's own
    /// standard error) and for the cabinet's temperatures (teaching happened at one of them).
    static func taught(_ taught: TaughtAlloy, index: Int, of count: Int, perKelvin: (low: Double, high: Double), temperatures: ClosedRange<Double>)
        -> AlloyWindow {
        let widen = 1 + 1 / (2 * Double(max(taught.samples, 2) - 1)).squareRoot()
        let kelvinSpread = (temperatures.upperBound - temperatures.lowerBound) / 12.squareRoot()
        func axis(_ a: CoinSpread.Axis, _ perKelvin: Double) -> CoinSpread.Axis {
            let sigma = a.sigma * widen, drift = perKelvin * kelvinSpread * a.mean
            return CoinSpread.Axis(mean: a.mean, sigma: (sigma * sigma + drift * drift).squareRoot())
        }
        let permeability = taught.logPermeability.map { CoinSpread.Axis(mean: $0.mean, sigma: $0.sigma * widen) }
            ?? CoinSpread.Axis(mean: 0, sigma: 1)
        return AlloyWindow(
            name: count > 1 ? "taught \(index + 1) of \(count)" : "taught", origin: .taught, low: axis(taught.conductivityLow, perKelvin.low),
            high: axis(taught.conductivityHigh, perKelvin.high), lowUnmeasured: taught.conductivityLow.mean,
            highUnmeasured: taught.conductivityHigh.mean, logPermeability: permeability, perKelvin: perKelvin)
    }

    /// This window moved by the mech's bias (taught mean ÷ nominal centre), as foreign coins are.
    func biased(low lowBias: Double, high highBias: Double) -> AlloyWindow {
        AlloyWindow(name: name, origin: origin, low: .init(mean: low.mean * lowBias, sigma: low.sigma * lowBias),
                    high: .init(mean: high.mean * highBias, sigma: high.sigma * highBias), lowUnmeasured: lowUnmeasured * lowBias,
                    highUnmeasured: highUnmeasured * highBias, logPermeability: logPermeability, perKelvin: perKelvin)
    }

    /// How far (σ, over the three axes) another window's centre lies from this one's.
    func distance(to other: AlloyWindow) -> Double {
        let zl = (other.low.mean - low.mean) / low.sigma, zh = (other.high.mean - high.mean) / high.sigma
        let zm = (other.logPermeability.mean - logPermeability.mean) / logPermeability.sigma
        return (zl * zl + zh * zh + zm * zm).squareRoot()
    }

    /// The thickness of a coin whose table records none (coinsim's likewise).
    static let unrecordedThicknessMM = 1.8
    /// A coin alloy within its composition tolerance: ±3.6 % read as ±3σ (cupro-nickel's nickel
    /// ±1 % moves its resistivity by that much).
    static let alloySpread = 0.012
    /// A plated steel blank's permeability: mints hold their blanks' signature to a tolerance
    /// so that validators work, ±15 % read as ±3σ.
    static let permeabilitySpread = 0.05
}
