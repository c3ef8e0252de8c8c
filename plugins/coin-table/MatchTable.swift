import CoinMechPluginABI
import CoinMechPluginKit

/// The candidates as `validate` scans them, in buffers allocated once, so deciding touches no
/// reference counts and allocates nothing; and the verdicts prepared for every outcome.
final class MatchTable {
    /// A candidate as the scan sees it: centres and reciprocal spreads, flat.
    struct Row {
        /// Centre and 1 / (σ × window) per axis: a reading inside the window scores ≤ 1.
        let diameter, diameterScale, weight, weightScale, thickness, thicknessScale: Double
        /// 1 / (limit × centre) per axis for a hard `tolerance` limit; 0 where there is none.
        let diameterLimit, weightLimit, thicknessLimit: Double

        init(_ candidate: Candidate, window: Double) {
            let s = candidate.spread
            diameter = s.diameter.mean
            diameterScale = 1 / (s.diameter.sigma * window)
            weight = s.weight.mean
            weightScale = 1 / (s.weight.sigma * window)
            // Scale 0 where the candidate has no thickness: a measured one does not count there.
            thickness = s.thickness?.mean ?? 0
            thicknessScale = s.thickness.map { 1 / ($0.sigma * window) } ?? 0
            func limit(_ relative: Double?, _ centre: Double) -> Double { relative.map { 1 / ($0 * centre) } ?? 0 }
            diameterLimit = limit(candidate.limit.diameter, diameter)
            weightLimit = limit(candidate.limit.weight, weight)
            thicknessLimit = s.thickness == nil ? 0 : limit(candidate.limit.thickness, thickness)
        }
    }

    /// What the scan found.
    enum Match: Equatable {
        /// No own denomination holds the reading (or a foreign coin clearly is nearest): pass.
        case none
        /// Own candidate `index` holds it and every other is farther by the margin.
        case accept(Int)
        /// Own candidate `own` and candidate `other` are both within reach.
        case ambiguous(own: Int, other: Int)
    }

    /// Low bits of a score that hold the row index (the distance keeps 44 of its 52 mantissa bits).
    static let indexMask: UInt64 = 0xFF
    static let maxRows = Int(indexMask)

    let ownCount: Int
    /// The margin in units of the window (the rows' scale).
    let scaledMargin: Double
    private let rows: UnsafeMutableBufferPointer<Row>
    private let accepts: UnsafeMutableBufferPointer<DecisionTemplate>
    /// `ambiguous[own * rows.count + other]`.
    private let ambiguous: UnsafeMutableBufferPointer<DecisionTemplate>

    init(_ list: CandidateList) {
        let all = list.all
        precondition(all.count <= Self.maxRows, "a coin table scans at most \(Self.maxRows) rows")
        ownCount = list.own.count
        scaledMargin = list.margin / list.window
        rows = .allocate(capacity: all.count)
        _ = rows.initialize(from: all.map { Row($0, window: list.window) })
        accepts = .allocate(capacity: ownCount)
        _ = accepts.initialize(from: list.own.map { .accept(currency: $0.spec.currency, code: $0.spec.code, valueMinor: $0.spec.valueMinor) })
        ambiguous = .allocate(capacity: ownCount * all.count)
        _ = ambiguous.initialize(from: list.own.flatMap { own in
            all.map { other in
                DecisionTemplate.reject(reason: "ambiguous", message: "could be \(own.name) or \(other.name): too close to both to tell, returned")
            }
        })
    }

    deinit {
        rows.deallocate()
        accepts.deallocate()
        ambiguous.deallocate()
    }

    /// Scores every candidate for a reading of finite figures. `hasWeight` and `hasThickness`
    /// say which of `w` and `t` were measured; an axis not measured counts nowhere.
    ///
    /// Every row is scored and none is skipped by a branch: which window a noisy reading falls
    /// in is random, and a mispredicted branch costs more than scoring a row. Each score is the
    /// squared distance's bit pattern (ordered like the distance, as it is never negative) with
    /// the row index in its low bits, so integer minima find the nearest row (the lower index on
    /// a tie), the runner-up, and the nearest row whose window holds the reading.
    @inline(__always)
    func match(_ d: Double, _ w: Double, _ t: Double, hasWeight: Bool, hasThickness: Bool) -> Match {
        let weightWeight: Double = hasWeight ? 1 : 0
        let thicknessWeight: Double = hasThickness ? 1 : 0
        var nearest = UInt64.max, second = UInt64.max, holding = UInt64.max
        for index in 0..<rows.count {
            let row = rows[index]
            let dd = d - row.diameter
            let dw = (w - row.weight) * weightWeight
            let dt = (t - row.thickness) * thicknessWeight
            let zd = dd * row.diameterScale, zw = dw * row.weightScale, zt = dt * row.thicknessScale
            let d2 = zd * zd + zw * zw + zt * zt
            let ld = dd * row.diameterLimit, lw = dw * row.weightLimit, lt = dt * row.thicknessLimit
            let outside = Swift.max(d2, ld * ld, lw * lw, lt * lt) > 1
            let score = d2.bitPattern & ~Self.indexMask | UInt64(index)
            second = Swift.min(second, Swift.max(nearest, score))
            nearest = Swift.min(nearest, score)
            holding = Swift.min(holding, outside ? .max : score)
        }
        guard holding != .max else { return .none }
        let chosen = Int(holding & Self.indexMask)
        let runnerUp = Int(nearest & Self.indexMask) == chosen ? second : nearest
        guard runnerUp != .max else { return chosen < ownCount ? .accept(chosen) : .none }
        let chosenDistance = Double(bitPattern: holding & ~Self.indexMask).squareRoot()
        let runnerUpDistance = Double(bitPattern: runnerUp & ~Self.indexMask).squareRoot()
        let other = Int(runnerUp & Self.indexMask)
        if runnerUpDistance - chosenDistance >= scaledMargin {
            return chosen < ownCount ? .accept(chosen) : .none
        }
        if chosen < ownCount { return .ambiguous(own: chosen, other: other) }
        return other < ownCount ? .ambiguous(own: other, other: chosen) : .none
    }

    /// Writes the verdict of `match`; `.none` leaves the decision PASS.
    @inline(__always)
    func write(_ match: Match, to decision: UnsafeMutablePointer<coinmech_decision>) {
        switch match {
        case .none: return
        case .accept(let index): DecisionTemplate.write(accepts.baseAddress! + index, to: decision)
        case .ambiguous(let own, let other): DecisionTemplate.write(ambiguous.baseAddress! + own * rows.count + other, to: decision)
        }
    }
}
