import CoinFacts
import Numerics

/// What a coin's surface impedance means to a mech's firmware: the conductivity of the one
/// plain, non-magnetic plate of the measured thickness that would lose as much to eddy currents
/// (the same real part of its surface impedance) at that frequency.
///
/// That is the figure a conductivity meter reports (ASTM E1004 inverts the same way, for a
/// plate thick against the skin depth). For a solid non-magnetic coin it is the alloy's own
/// conductivity at every frequency; for a clad or plated coin it moves from the thickness-weighted
/// mean of its layers (low frequency, the field crosses the coin) to its surface layer's (high
/// frequency, the field stays in it); a magnetic coin loses far more than any copper alloy, so it
/// reads as a poor conductor, lower still at the high frequency.
public enum ApparentConductivity {
    /// The apparent conductivity in % IACS of a surface resistance `resistance` (Ω) measured at
    /// `hz` on a coin `thicknessMM` thick. The plate's resistance falls steadily as its
    /// conductivity rises, so one conductivity matches; it is found on a logarithmic scale
    /// between 10⁻⁴ and 10⁴ % IACS by regula falsi (Illinois), a few steps to 10⁻⁹.
    public static func iacs(resistance: Double, thicknessMM: Double, hz: Double) -> Double {
        guard resistance.isFinite, resistance > 0, thicknessMM > 0, hz > 0 else { return .nan }
        let thickness = thicknessMM / 1000
        let target = Double.log(resistance)
        // f(u) = ln R(σ = e^u) − ln R_target: positive for a poor conductor, negative for a good one.
        func f(_ u: Double) -> Double {
            let plate = SurfaceImpedance.Layer(conductivity: Double.exp(u), permeability: 1, thickness: thickness)
            return Double.log(SurfaceImpedance.of(CollectionOfOne(plate), hz: hz).real) - target
        }
        let unit = Material.iacsSiemensPerMetre / 100
        var low = Double.log(unit * 1e-4), high = Double.log(unit * 1e4)
        var fLow = f(low), fHigh = f(high)
        if fLow <= 0 { return 1e-4 }
        if fHigh >= 0 { return 1e4 }
        var side = 0
        for _ in 0..<100 {
            let u = (low * fHigh - high * fLow) / (fHigh - fLow)
            let fu = f(u)
            if fu.magnitude < 1e-11 || high - low < 1e-11 { return Double.exp(u) / unit }
            if fu > 0 {
                low = u
                fLow = fu
                if side == 1 { fHigh /= 2 }
                side = 1
            } else {
                high = u
                fHigh = fu
                if side == -1 { fLow /= 2 }
                side = -1
            }
        }
        return Double.exp((low + high) / 2) / unit
    }
}
