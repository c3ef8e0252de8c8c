import CoinFacts
import Numerics

/// A layered coin's surface impedance: what an eddy-current coil at one frequency measures of it.
///
/// The coil's field meets the coin face on as a plane wave meets a layered conductor. In a layer
/// of conductivity σ and permeability μ it decays with depth over the skin depth
/// δ = 1/√(π f μ σ): its propagation constant is γ = (1 + j)/δ and its wave impedance
/// η = (1 + j)/(σδ). The impedance looking into a layer of thickness d whose far side sees Z is
/// the transmission-line transform η (Z + η tanh γd) / (η + Z tanh γd); the stack is transformed
/// from the far face (air, 376.73 Ω) to the face the coil looks at. Its real part is the eddy
/// currents' loss. So a thin layer the field crosses counts for its sheet conductance σd, a
/// layer many skin depths thick hides everything behind it, and a magnetic layer (μ ≫ μ₀) stops
/// the field within micrometres.
public enum SurfaceImpedance {
    /// μ₀, H/m.
    public static let vacuumPermeability = 4e-7 * Double.pi
    /// The impedance of free space, Ω: what lies behind the coin's far face.
    public static let freeSpace = 376.730_313

    /// One layer as the field sees it.
    public struct Layer: Sendable, Hashable {
        /// S/m.
        public var conductivity: Double
        /// Relative.
        public var permeability: Double
        /// m.
        public var thickness: Double

        public init(conductivity: Double, permeability: Double, thickness: Double) {
            self.conductivity = conductivity
            self.permeability = permeability
            self.thickness = thickness
        }

        /// The skin depth at `hz`, m.
        public func skinDepth(hz: Double) -> Double {
            1 / (Double.pi * hz * SurfaceImpedance.vacuumPermeability * permeability * conductivity).squareRoot()
        }
    }

    /// The surface impedance (Ω) of `layers`, listed from the face the coil looks at, at `hz`.
    public static func of(_ layers: some BidirectionalCollection<Layer>, hz: Double) -> Complex<Double> {
        var z = Complex<Double>(freeSpace, 0)
        for layer in layers.reversed() { z = transform(z, through: layer, hz: hz) }
        return z
    }

    /// The impedance looking into `layer` whose far side sees `z`.
    @inline(__always)
    static func transform(_ z: Complex<Double>, through layer: Layer, hz: Double) -> Complex<Double> {
        let omega = 2 * Double.pi * hz
        let mu = vacuumPermeability * layer.permeability
        // γ = (1 + j) k and η = (1 + j) r with k = 1/δ = √(ωμσ/2), r = √(ωμ/(2σ)).
        let k = (omega * mu * layer.conductivity / 2).squareRoot()
        let r = (omega * mu / (2 * layer.conductivity)).squareRoot()
        let eta = Complex<Double>(r, r)
        let t = tanhOfEqualParts(k * layer.thickness)
        return eta * (z + eta * t) / (eta + z * t)
    }

    /// tanh(a + ja) = (sinh 2a + j sin 2a) / (cosh 2a + cos 2a); 1 once the layer is many skin
    /// depths thick (the field never reaches its far side).
    @inline(__always)
    static func tanhOfEqualParts(_ a: Double) -> Complex<Double> {
        guard a < 20 else { return Complex(1, 0) }
        let twice = 2 * a
        let denominator = Double.cosh(twice) + Double.cos(twice)
        return Complex(Double.sinh(twice) / denominator, Double.sin(twice) / denominator)
    }
}
