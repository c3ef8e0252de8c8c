import Foundation

/// One composition of a denomination as teach mode measured it on the alloy axis: where its
/// conductivities fall at the mech's two frequencies (% IACS) and its permeability (as a
/// logarithm: its spread is relative, and it spans 1 to hundreds). A denomination minted in two
/// compositions (the GBP 10p in cupro-nickel and in nickel-plated steel) is taught as two.
public struct TaughtAlloy: Sendable, Hashable, Codable {
    public var samples: Int
    public var conductivityLow: CoinSpread.Axis
    public var conductivityHigh: CoinSpread.Axis
    /// ln(permeability); nil when the mech measures none.
    public var logPermeability: CoinSpread.Axis?

    enum CodingKeys: String, CodingKey {
        case samples
        case conductivityLow = "conductivity_low"
        case conductivityHigh = "conductivity_high"
        case logPermeability = "log_permeability"
    }

    public init(samples: Int, conductivityLow: CoinSpread.Axis, conductivityHigh: CoinSpread.Axis, logPermeability: CoinSpread.Axis?) {
        self.samples = samples
        self.conductivityLow = conductivityLow
        self.conductivityHigh = conductivityHigh
        self.logPermeability = logPermeability
    }

    /// One sample's alloy figures.
    public typealias Sample = (lowIACS: Double, highIACS: Double, permeability: Double?)

    /// Samples of two compositions lie this far apart or more on some axis, relative (ln): a
    /// composition's own coins lie within a few per cent of each other, two compositions of one
    /// coin tens of per cent apart (docs/PERFORMANCE.md, "Fraud").
    public static let compositionGap = 0.15

    /// The compositions the samples show, one window each, largest first: samples are grouped
    /// when a chain of neighbours less than `compositionGap` apart (on every axis, relative)
    /// joins them. A group of fewer than `CoinCalibration.minimumSamples` coins is left out: its
    /// σ would not be worth trusting (coin-table then keeps the mint's window for it). Nil when
    /// no sample measured the alloy axis.
    public static func fit(_ samples: [Sample]) -> [TaughtAlloy]? {
        let points = samples.compactMap(Self.point)
        guard !points.isEmpty else { return nil }
        var group = Array(0..<points.count)
        func root(_ i: Int) -> Int {
            var i = i
            while group[i] != i { i = group[i] }
            return i
        }
        for i in points.indices {
            for j in points.indices where j > i {
                let apart = zip(points[i], points[j]).map { abs($0 - $1) }.max() ?? 0
                if apart < compositionGap { group[root(j)] = root(i) }
            }
        }
        var members: [Int: [[Double]]] = [:]
        for i in points.indices { members[root(i), default: []].append(points[i]) }
        let fitted = members.values.filter { $0.count >= CoinCalibration.minimumSamples }.sorted { $0.count > $1.count }.map { group -> TaughtAlloy in
            func axis(_ values: [Double], floor: Double) -> CoinSpread.Axis {
                let mean = values.reduce(0, +) / Double(values.count)
                let variance = values.reduce(0) { $0 + ($1 - mean) * ($1 - mean) } / Double(max(1, values.count - 1))
                return CoinSpread.Axis(mean: mean, sigma: max(variance.squareRoot(), floor))
            }
            // Back from logarithms for the conductivities (the axes coin-table scores linearly).
            let low = group.map { exp($0[0]) }, high = group.map { exp($0[1]) }
            let lowAxis = axis(low, floor: 0), highAxis = axis(high, floor: 0)
            return TaughtAlloy(
                samples: group.count,
                conductivityLow: CoinSpread.Axis(mean: lowAxis.mean, sigma: max(lowAxis.sigma, lowAxis.mean * 0.002)),
                conductivityHigh: CoinSpread.Axis(mean: highAxis.mean, sigma: max(highAxis.sigma, highAxis.mean * 0.002)),
                logPermeability: group.allSatisfy { $0.count == 3 } ? axis(group.map { $0[2] }, floor: 0.002) : nil)
        }
        return fitted
    }

    /// A sample as logarithms (conductivities near zero count from 0.01 % IACS).
    static func point(_ sample: Sample) -> [Double]? {
        guard sample.lowIACS.isFinite, sample.highIACS.isFinite, sample.lowIACS >= 0, sample.highIACS >= 0 else { return nil }
        var point = [log(max(sample.lowIACS, 0.01)), log(max(sample.highIACS, 0.01))]
        if let permeability = sample.permeability {
            guard permeability.isFinite, permeability > 0 else { return nil }
            point.append(log(permeability))
        }
        return point
    }
}
