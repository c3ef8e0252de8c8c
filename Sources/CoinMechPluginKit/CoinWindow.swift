/// The acceptance window of one denomination: nominal figures and a relative tolerance per axis.
public struct CoinWindow: Sendable, Encodable {
    public let diameter: Double
    public let weight: Double
    public let thickness: Double?
    public let diameterTolerance: Double
    public let weightTolerance: Double
    public let thicknessTolerance: Double
    /// Reciprocal half-widths of the window, precomputed so validating divides nothing:
    /// `(reading - nominal) * scale` is within ±1 inside the window.
    public let diameterScale: Double
    public let weightScale: Double
    public let thicknessScale: Double
    /// Nominal thickness, or NaN when the window has none.
    @usableFromInline let thicknessOrNaN: Double

    public init(
        diameter: Double, weight: Double, thickness: Double?, diameterTolerance: Double, weightTolerance: Double,
        thicknessTolerance: Double
    ) throws(PluginConfigError) {
        try require(diameter, in: 1...100, key: "diameter_mm")
        try require(weight, in: 0.1...100, key: "weight_g")
        if let thickness { try require(thickness, in: 0.1...20, key: "thickness_mm") }
        try require(diameterTolerance, in: 0.001...0.5, key: "diameter_tolerance")
        try require(weightTolerance, in: 0.001...0.5, key: "weight_tolerance")
        try require(thicknessTolerance, in: 0.001...0.5, key: "thickness_tolerance")
        self.diameter = diameter
        self.weight = weight
        self.thickness = thickness
        self.diameterTolerance = diameterTolerance
        self.weightTolerance = weightTolerance
        self.thicknessTolerance = thicknessTolerance
        diameterScale = 1 / (diameter * diameterTolerance)
        weightScale = 1 / (weight * weightTolerance)
        thicknessScale = 1 / ((thickness ?? 1) * thicknessTolerance)
        thicknessOrNaN = thickness ?? .nan
    }

    private enum CodingKeys: String, CodingKey {
        case diameter = "diameter_mm", weight = "weight_g", thickness = "thickness_mm"
        case diameterTolerance = "diameter_tolerance", weightTolerance = "weight_tolerance"
        case thicknessTolerance = "thickness_tolerance"
    }

    /// Squared normalised distance from nominal (each axis scaled so its window edge is 1),
    /// or nil when the reading lies outside the window or lacks diameter or weight.
    /// Thickness counts only when both the window and the reading have it.
    @inlinable @inline(__always)
    public func distance(_ reading: ReadingView) -> Double? {
        guard let d = reading.diameterMM, let w = reading.weightG else { return nil }
        return distance(diameter: d, weight: w, thickness: reading.thicknessMM)
    }

    @inlinable @inline(__always)
    public func distance(diameter d: Double, weight w: Double, thickness t: Double?) -> Double? {
        let dd = (d - diameter) * diameterScale
        let dw = (w - weight) * weightScale
        guard dd * dd <= 1, dw * dw <= 1 else { return nil }  // NaN fails both comparisons
        var sum = dd * dd + dw * dw
        if let t, !thicknessOrNaN.isNaN {
            let dt = (t - thicknessOrNaN) * thicknessScale
            guard dt * dt <= 1 else { return nil }
            sum += dt * dt
        }
        return sum
    }

    /// Plain bounds of the diameter and weight window, for a cheap first test in table scans.
    public var bounds: (diameter: ClosedRange<Double>, weight: ClosedRange<Double>) {
        ((diameter - 1 / diameterScale)...(diameter + 1 / diameterScale), (weight - 1 / weightScale)...(weight + 1 / weightScale))
    }

    /// Whether two windows share a region on every axis both have.
    public func overlaps(_ other: CoinWindow) -> Bool {
        func overlap(_ a: Double, _ ta: Double, _ b: Double, _ tb: Double) -> Bool { abs(a - b) <= a * ta + b * tb }
        guard overlap(diameter, diameterTolerance, other.diameter, other.diameterTolerance),
              overlap(weight, weightTolerance, other.weight, other.weightTolerance) else { return false }
        if let t = thickness, let u = other.thickness {
            return overlap(t, thicknessTolerance, u, other.thicknessTolerance)
        }
        return true
    }
}
