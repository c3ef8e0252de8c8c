import CoinFacts
import Numerics

/// A mech's eddy-current sensor: a coil (or an inductance-to-digital converter's tank) driven at
/// a low and a high frequency, and a magnetic pick-up. What it reports of a coin is its alloy
/// axis: the apparent conductivity at each frequency (`ApparentConductivity`, from the coin's
/// layered surface impedance, `SurfaceImpedance`) and its apparent permeability.
public struct EddyCurrentSensor: Sendable, Hashable {
    /// The low frequency, Hz: its field reaches into the core of most coins (skin depth in
    /// copper 0.27 mm, in cupro-nickel 1.1 mm), so it weighs the core.
    public var lowHz: Double
    /// The high frequency, Hz: its field stays near the faces (skin depth in copper 66 µm, in
    /// cupro-nickel 0.28 mm), so it sees a cladding or a plating.
    public var highHz: Double

    public init(lowHz: Double, highHz: Double) {
        self.lowHz = lowHz
        self.highHz = highHz
    }

    /// The protocol's reference pair (docs/PROTOCOL.md): 60 kHz and 1 MHz.
    public static let reference = EddyCurrentSensor(lowHz: 60_000, highHz: 1_000_000)

    /// The thickness a mech without a thickness sensor assumes when it converts, mm.
    public static let assumedThicknessMM = 2.0

    /// What the sensor reports of one coin.
    public struct Signature: Sendable, Hashable {
        /// Apparent conductivity at the low frequency, % IACS.
        public var lowIACS: Double
        /// At the high frequency, % IACS.
        public var highIACS: Double
        /// Apparent relative permeability (1: not magnetic).
        public var permeability: Double

        public init(lowIACS: Double, highIACS: Double, permeability: Double) {
            self.lowIACS = lowIACS
            self.highIACS = highIACS
            self.permeability = permeability
        }
    }

    /// How one coin's metal differs from the nominal: its conductivities and permeabilities
    /// scaled (an alloy within its composition tolerance, a steel of another grade).
    public struct Variation: Sendable, Hashable {
        public var conductivity: Double
        public var permeability: Double

        public init(conductivity: Double = 1, permeability: Double = 1) {
            self.conductivity = conductivity
            self.permeability = permeability
        }

        public static let none = Variation()
    }

    /// The coil's footprint: a disc this wide (mm) centred on the coin, over which its loss is
    /// taken as uniform. Every coin of CoinMech's tables but the smallest covers it; what lies
    /// beyond it (a large coin's rim) the coil does not see.
    public static let footprintMM = 20.0

    /// The signature of a coin built as `construction`, truly `diameterMM` across and
    /// `thicknessMM` thick, at `celsius`, as firmware reports it that measured the coin
    /// `measuredDiameterMM` across (nil: as it is) and `measuredThicknessMM` thick (nil: it has
    /// no thickness sensor and assumes `assumedThicknessMM`).
    public func signature(
        of construction: CoinConstruction, diameterMM: Double, thicknessMM: Double, measuredDiameterMM: Double? = nil, measuredThicknessMM: Double?,
        celsius: Double = 20, variation: Variation = .none
    ) -> Signature {
        let measured = measuredThicknessMM ?? Self.assumedThicknessMM
        // The firmware knows how much of the footprint a plain coin of the diameter it measured
        // covers, and scales the loss up by it: a coin's size does not move its conductivity. A
        // hole it cannot know of.
        let coverage = Self.coverage(diameterMM: measuredDiameterMM ?? diameterMM)
        func conductivity(_ hz: Double) -> Double {
            ApparentConductivity.iacs(
                resistance: Self.resistance(of: construction, diameterMM: diameterMM, thicknessMM: thicknessMM, hz: hz, celsius: celsius,
                                            variation: variation) / coverage,
                thicknessMM: measured, hz: hz)
        }
        let magnetic = Self.permeability(of: construction, diameterMM: diameterMM, thicknessMM: thicknessMM, variation: variation)
        return Signature(lowIACS: conductivity(lowHz), highIACS: conductivity(highHz), permeability: 1 + (magnetic - 1) / coverage)
    }

    /// How much of the footprint a plain disc `diameterMM` across covers.
    public static func coverage(diameterMM: Double) -> Double {
        let radius = min(max(diameterMM, 0) / 2, footprintMM / 2)
        return max(radius * radius / (footprintMM * footprintMM / 4), 1e-6)
    }

    /// The parts of a coin under the coil: each stack with its share of the footprint (an
    /// empty stack is a washer's hole, air).
    static func regions(of construction: CoinConstruction, diameterMM: Double) -> [(stack: LayerStack, share: Double)] {
        let radius = min(diameterMM / 2, footprintMM / 2), footprint = footprintMM * footprintMM / 4
        switch construction {
        case .stack(let stack):
            return [(stack, radius * radius / footprint)]
        case .bimetallic(let ring, let centre, let centreDiameter):
            let inner = min(centreDiameter * diameterMM / 2, footprintMM / 2)
            return [(centre, inner * inner / footprint), (ring, (radius * radius - inner * inner) / footprint)]
        }
    }

    /// The coil's loss to the coin at `hz` (Ω, per unit of footprint): each part's surface
    /// resistance by its share of the footprint. A two-metal coin's ring and centre lie side
    /// by side under the coil; a washer's hole adds nothing.
    public static func resistance(of construction: CoinConstruction, diameterMM: Double, thicknessMM: Double, hz: Double, celsius: Double,
                                  variation: Variation) -> Double {
        regions(of: construction, diameterMM: diameterMM).reduce(0) { sum, region in
            sum + region.share * impedance(of: region.stack, thicknessMM: thicknessMM, hz: hz, celsius: celsius, variation: variation).real
        }
    }

    /// A stack's surface impedance; zero for an empty one (a washer's hole: no metal, no loss).
    static func impedance(of stack: LayerStack, thicknessMM: Double, hz: Double, celsius: Double, variation: Variation) -> Complex<Double> {
        guard !stack.layers.isEmpty else { return .zero }
        let thicknesses = stack.thicknesses(total: thicknessMM)
        var z = Complex<Double>(SurfaceImpedance.freeSpace, 0)
        for index in stack.layers.indices.reversed() {
            let material = stack.layers[index].material
            let layer = SurfaceImpedance.Layer(
                conductivity: material.iacs(at: celsius) / 100 * Material.iacsSiemensPerMetre * variation.conductivity,
                permeability: max(1, material.permeability * (material.permeability > 1 ? variation.permeability : 1)),
                thickness: thicknesses[index] / 1000)
            guard layer.thickness > 0 else { continue }
            z = SurfaceImpedance.transform(z, through: layer, hz: hz)
        }
        return z
    }

    /// The apparent permeability under the footprint: 1 plus each layer's excess permeability
    /// weighted by its volume there (a static field crosses the whole coin; a washer's hole is
    /// air, 1).
    public static func permeability(of construction: CoinConstruction, diameterMM: Double, thicknessMM: Double, variation: Variation = .none) -> Double {
        func excess(_ stack: LayerStack) -> Double {
            let thicknesses = stack.thicknesses(total: thicknessMM)
            let total = thicknesses.reduce(0, +)
            guard total > 0 else { return 0 }
            return zip(stack.layers, thicknesses).reduce(0) { sum, pair in
                let mu = pair.0.material.permeability
                return sum + ((mu > 1 ? mu * variation.permeability : mu) - 1) * pair.1
            } / total
        }
        return 1 + regions(of: construction, diameterMM: diameterMM).reduce(0) { $0 + $1.share * excess($1.stack) }
    }
}
