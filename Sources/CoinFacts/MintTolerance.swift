/// How far a genuine coin may lie from its nominal figures as it leaves the mint (±, absolute),
/// per axis; nil where the mint publishes no figure.
///
/// Mints set a tolerance so that nearly every coin falls inside it: the Royal Mint's are about
/// ±3 standard deviations (99.7 % of coins), which is how a validator reads them
/// (`standardDeviation`).
public struct MintTolerance: Sendable, Hashable {
    public let diameterMM: Double?
    public let weightG: Double?
    public let thicknessMM: Double?

    public init(diameterMM: Double? = nil, weightG: Double? = nil, thicknessMM: Double? = nil) {
        self.diameterMM = diameterMM
        self.weightG = weightG
        self.thicknessMM = thicknessMM
    }

    /// What a validator assumes where the mint publishes nothing, relative to the nominal figure:
    /// ±0.5 % diameter, ±4 % weight, ±5 % thickness. The published weight tolerances are of that
    /// order (31 U.S.C. § 5113: ±3.9 % on the nickel, ±5.2 % on the cent); diameters are struck in
    /// a collar and vary far less.
    public static let assumedRelative = (diameter: 0.005, weight: 0.04, thickness: 0.05)

    /// Tolerances are read as ±3σ: the spread of genuine coins on each axis, absolute, using
    /// the assumed relative tolerance where none is published.
    public static func standardDeviation(of spec: CoinSpec) -> (diameter: Double, weight: Double, thickness: Double?) {
        let t = spec.tolerance
        return ((t.diameterMM ?? spec.diameterMM * assumedRelative.diameter) / 3,
                (t.weightG ?? spec.weightG * assumedRelative.weight) / 3,
                spec.thicknessMM.map { (t.thicknessMM ?? $0 * assumedRelative.thickness) / 3 })
    }
}
