import CoinMechPluginABI
import CoinMechPluginKit

/// The candidates as `validate` scans them, in buffers allocated once, so deciding touches no
/// reference counts and allocates nothing; and the verdicts prepared for every outcome.
final class MatchTable {
    /// A candidate as the scan sees it: centres and reciprocal spreads, flat.
    struct Row {
        /// Centre and 1 / (σ × window) per axis: a reading inside the window scores ≤ 1.
        let diameter, diameterScale, weight, weightScale, thickness, thicknessScale: Double
        /// For a hard `tolerance` limit: 1 / (the limit in the axis's scaled units)², so a scaled
        /// square times it exceeds 1 outside the limit; 0 where there is none.
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
            func limit(_ relative: Double?, _ centre: Double, _ scale: Double) -> Double {
                relative.map { 1 / (($0 * centre * scale) * ($0 * centre * scale)) } ?? 0
            }
            diameterLimit = limit(candidate.limit.diameter, diameter, diameterScale)
            weightLimit = limit(candidate.limit.weight, weight, weightScale)
            thicknessLimit = s.thickness == nil ? 0 : limit(candidate.limit.thickness, thickness, thicknessScale)
        }
    }

    /// What the scan found.
    enum Match: Equatable {
        /// The nearest candidate's window does not hold the reading, or the nearest is a foreign
        /// coin with no own denomination within the margin: pass.
        case none
        /// Own candidate `index` is nearest, holds the reading, and every other is farther by the margin.
        case accept(Int)
        /// The nearest holds the reading but the runner-up is within the margin; one is `own`.
        case ambiguous(own: Int, other: Int)
    }

    /// Low bits of a score: the row index, and above it a bit set when the row's window (or hard
    /// limit) does not hold the reading. The distance keeps 43 of its 52 mantissa bits.
    static let indexMask: UInt64 = 0xFF
    static let outsideShift: UInt64 = 8
    static let flagMask: UInt64 = 0x1FF
    static let maxRows = Int(indexMask)

    /// Rows in scan order: own denominations, then foreign coins scored on readings with a
    /// weight, then those scored only on readings with a thickness too. A reading scans the
    /// prefix it can judge, so no row needs a test of its own.
    let ownCount: Int
    private let withWeightCount: Int
    private let withThicknessCount: Int
    /// Whether any row has a hard limit; a table without one skips that arithmetic.
    let hasLimits: Bool
    /// The margin in units of the window (the rows' scale), and its square.
    let scaledMargin, scaledMarginSquared: Double
    private let rows: UnsafeMutableBufferPointer<Row>
    private let accepts: UnsafeMutableBufferPointer<DecisionTemplate>
    /// `ambiguous[own * rows.count + other]`.
    private let ambiguous: UnsafeMutableBufferPointer<DecisionTemplate>

    init(_ list: CandidateList) {
        let all = list.all
        precondition(all.count <= Self.maxRows, "a coin table scans at most \(Self.maxRows) rows")
        ownCount = list.own.count
        withWeightCount = ownCount + list.foreign.filter { !$0.onlyWithThickness }.count
        withThicknessCount = all.count
        precondition(all[withWeightCount...].allSatisfy(\.onlyWithThickness), "foreign coins scored only with a thickness come last")
        hasLimits = list.own.contains { $0.limit.diameter != nil || $0.limit.weight != nil || $0.limit.thickness != nil }
        scaledMargin = list.margin / list.window
        scaledMarginSquared = scaledMargin * scaledMargin
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
    /// the row index and whether its window holds the reading in its low bits, so two integer
    /// minima find the nearest row (the lower index on a tie) and the runner-up.
    @inline(__always)
    func match(_ d: Double, _ w: Double, _ t: Double, hasWeight: Bool, hasThickness: Bool) -> Match {
        // A copy of the scan for each kind of reading and table, chosen once per reading (a mech
        // sends one kind): an axis not measured, or a limit not configured, costs nothing.
        let scanned = hasWeight ? (hasThickness ? withThicknessCount : withWeightCount) : ownCount
        switch (hasWeight, hasThickness, hasLimits) {
        case (true, true, false): return scan(d, w, t, rows: scanned, weight: true, thickness: true, limits: false)
        case (true, false, false): return scan(d, w, t, rows: scanned, weight: true, thickness: false, limits: false)
        case (false, true, false): return scan(d, w, t, rows: scanned, weight: false, thickness: true, limits: false)
        case (false, false, false): return scan(d, w, t, rows: scanned, weight: false, thickness: false, limits: false)
        case (true, true, true): return scan(d, w, t, rows: scanned, weight: true, thickness: true, limits: true)
        case (true, false, true): return scan(d, w, t, rows: scanned, weight: true, thickness: false, limits: true)
        case (false, true, true): return scan(d, w, t, rows: scanned, weight: false, thickness: true, limits: true)
        case (false, false, true): return scan(d, w, t, rows: scanned, weight: false, thickness: false, limits: true)
        }
    }

    @inline(__always)
    private func scan(_ d: Double, _ w: Double, _ t: Double, rows count: Int, weight: Bool, thickness: Bool, limits: Bool) -> Match {
        var nearest = UInt64.max, second = UInt64.max
        for index in 0..<count {
            let row = rows[index]
            let dd = d - row.diameter
            let zd = dd * row.diameterScale
            let zd2 = zd * zd
            var d2 = zd2, limit = limits ? zd2 * row.diameterLimit : 0
            if weight {
                let zw = (w - row.weight) * row.weightScale
                d2 += zw * zw
                if limits { limit = larger(limit, zw * zw * row.weightLimit) }
            }
            if thickness {
                // The scale is 0 where the candidate has no thickness: a measured one does not count there.
                let zt = (t - row.thickness) * row.thicknessScale
                d2 += zt * zt
                if limits { limit = larger(limit, zt * zt * row.thicknessLimit) }
            }
            // `a > b ? a : b` compiles to one maxsd (Swift.max keeps NaN ordering, which costs
            // three more instructions; the figures here are finite).
            let outside = UInt64((limits ? larger(d2, limit) : d2) > 1 ? 1 : 0)
            let score = d2.bitPattern & ~Self.flagMask | outside << Self.outsideShift | UInt64(index)
            second = Swift.min(second, Swift.max(nearest, score))
            nearest = Swift.min(nearest, score)
        }
        // The nearest candidate must hold the reading, and the runner-up lie farther by the margin.
        guard nearest >> Self.outsideShift & 1 == 0 else { return .none }
        let chosen = Int(nearest & Self.indexMask)
        guard second != .max else { return chosen < ownCount ? .accept(chosen) : .none }
        // runner-up − chosen ≥ margin, without square roots: r ≥ c + m ⟺ r² − c² − m² ≥ 2mc ≥ 0.
        let chosenSquared = Double(bitPattern: nearest & ~Self.flagMask)
        let excess = Double(bitPattern: second & ~Self.flagMask) - chosenSquared - scaledMarginSquared
        if excess >= 0 && excess * excess >= 4 * scaledMarginSquared * chosenSquared {
            return chosen < ownCount ? .accept(chosen) : .none
        }
        let other = Int(second & Self.indexMask)
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

/// The larger of two finite numbers, as one `maxsd`.
@inline(__always)
private func larger(_ a: Double, _ b: Double) -> Double { a > b ? a : b }
