/// The acceptance window of one denomination: nominal figures and a relative tolerance per axis.
public struct CoinWindow: Sendable, Encodable {
    public let diameter: Double
    public let weight: Double
    public let thickness: Double?
    public let diameterTolerance: Double
    public let weightTolerance: Double
    public let thicknessTolerance: Double
    // Half-widths, precomputed: validate does no division.
    private let diameterHalfWidth: Double
    private let weightHalfWidth: Double
    private let thicknessHalfWidth: Double

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
        diameterHalfWidth = diameter * diameterTolerance
        weightHalfWidth = weight * weightTolerance
        thicknessHalfWidth = (thickness ?? 0) * thicknessTolerance
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

    @inline(__always)
    public func distance(diameter d: Double, weight w: Double, thickness t: Double?) -> Double? {
        let dd = (d - diameter) / diameterHalfWidth
        let dw = (w - weight) / weightHalfWidth
        guard dd * dd <= 1, dw * dw <= 1 else { return nil }  // NaN fails both comparisons
        var sum = dd * dd + dw * dw
        if let nominal = thickness, let t {
            let dt = (t - nominal) / thicknessHalfWidth
            guard dt * dt <= 1 else { return nil }
            sum += dt * dt
        }
        return sum
    }

    /// Whether two windows share a region on every axis both have.
    public func overlaps(_ other: CoinWindow) -> Bool {
        func overlap(_ a: Double, _ ha: Double, _ b: Double, _ hb: Double) -> Bool { abs(a - b) <= ha + hb }
        guard overlap(diameter, diameterHalfWidth, other.diameter, other.diameterHalfWidth),
              overlap(weight, weightHalfWidth, other.weight, other.weightHalfWidth) else { return false }
        if let t = thickness, let u = other.thickness {
            return overlap(t, thicknessHalfWidth, u, other.thicknessHalfWidth)
        }
        return true
    }
}
