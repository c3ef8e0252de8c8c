import CoinMechPluginABI
import CoinMechPluginKit
import Foundation

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
        /// What a measured thickness adds to the squared distance of a candidate with none
        /// recorded: a typical 1σ², so a coin of unknown thickness is not favoured over one whose
        /// thickness the reading matches (0 where the candidate has one).
        let unknownThickness: Double
        /// 1 / centre per axis (0 for a thickness not recorded), for the drift.
        let reciprocalDiameter, reciprocalWeight, reciprocalThickness: Double

        init(_ candidate: Candidate, window: Double) {
            let s = candidate.spread
            diameter = s.diameter.mean
            diameterScale = 1 / (s.diameter.sigma * window)
            weight = s.weight.mean
            weightScale = 1 / (s.weight.sigma * window)
            // Scale 0 where the candidate has no thickness: a measured one does not count there.
            thickness = s.thickness?.mean ?? 0
            thicknessScale = s.thickness.map { 1 / ($0.sigma * window) } ?? 0
            unknownThickness = s.thickness == nil ? 1 / (window * window) : 0
            reciprocalDiameter = 1 / s.diameter.mean
            reciprocalWeight = 1 / s.weight.mean
            reciprocalThickness = s.thickness.map { 1 / $0.mean } ?? 0
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
        /// coin and no own denomination is nearly as likely: pass.
        case none
        /// Own candidate `index` is nearest and holds the reading; every other denomination is
        /// farther by the margin, and every foreign coin `foreign_odds` times less likely.
        case accept(Int)
        /// The nearest holds the reading but another denomination is within the margin, or a
        /// foreign coin within the odds; `own` is the link's own.
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
    /// 2 ln(foreign odds) in the same units: how much larger a foreign coin's squared distance
    /// must be than the accepted coin's (and the other way round for a foreign nearest to pass).
    let scaledForeignThreshold: Double
    /// How near its centre an accepted coin must lie to teach the drift: `certainRadius` σ, squared, in window units.
    let certainRadiusSquared: Double
    static let certainRadius = 2.5
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
        scaledForeignThreshold = 2 * log(list.foreignOdds) / (list.window * list.window)
        certainRadiusSquared = (Self.certainRadius / list.window) * (Self.certainRadius / list.window)
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

    /// The reciprocal of the centre of row `index`'s window (thickness 0 where it has none).
    @inline(__always)
    func reciprocalCentre(of index: Int) -> (diameter: Double, weight: Double, thickness: Double) {
        let row = rows[index]
        return (row.reciprocalDiameter, row.reciprocalWeight, row.reciprocalThickness)
    }

    /// Scores every candidate for a reading of finite figures. `hasWeight` and `hasThickness`
    /// say which of `w` and `t` were measured; an axis not measured counts nowhere.
    ///
    /// Every row is scored and none is skipped by a branch: which window a noisy reading falls
    /// in is random, and a mispredicted branch costs more than scoring a row. Each score is the
    /// squared distance's bit pattern (ordered like the distance, as it is never negative) with
    /// the row index and whether its window holds the reading in its low bits, so integer minima
    /// find the nearest own row (the lower index on a tie), the runner-up and the nearest foreign one.
    @inline(__always)
    func match(_ d: Double, _ w: Double, _ t: Double, hasWeight: Bool, hasThickness: Bool) -> Match {
        var certain = false
        return match(d, w, t, hasWeight: hasWeight, hasThickness: hasThickness, certain: &certain)
    }

    /// The same, and whether an accept is beyond doubt: within `certainRadius` σ of its centre.
    /// Only such coins teach the drift, so a coin credited near the edge of a window cannot pull
    /// the window its way. The cut is a sphere round the centre, the same on every side: a cut
    /// that also left out coins near another denomination or a foreign twin (farther by twice the
    /// margin, twice the odds) trimmed the side facing the twin, pushed the learnt drift away from
    /// it, and returned more genuine coins (USD taught, 0.6 % diameter: 1.01–1.09 % against 0.89–0.92 %).
    @inline(__always)
    func match(_ d: Double, _ w: Double, _ t: Double, hasWeight: Bool, hasThickness: Bool, certain: inout Bool) -> Match {
        // A copy of the scan for each kind of reading and table, chosen once per reading (a mech
        // sends one kind): an axis not measured, or a limit not configured, costs nothing.
        let scanned = hasWeight ? (hasThickness ? withThicknessCount : withWeightCount) : ownCount
        switch (hasWeight, hasThickness, hasLimits) {
        case (true, true, false): return scan(d, w, t, rows: scanned, weight: true, thickness: true, limits: false, certain: &certain)
        case (true, false, false): return scan(d, w, t, rows: scanned, weight: true, thickness: false, limits: false, certain: &certain)
        case (false, true, false): return scan(d, w, t, rows: scanned, weight: false, thickness: true, limits: false, certain: &certain)
        case (false, false, false): return scan(d, w, t, rows: scanned, weight: false, thickness: false, limits: false, certain: &certain)
        case (true, true, true): return scan(d, w, t, rows: scanned, weight: true, thickness: true, limits: true, certain: &certain)
        case (true, false, true): return scan(d, w, t, rows: scanned, weight: true, thickness: false, limits: true, certain: &certain)
        case (false, true, true): return scan(d, w, t, rows: scanned, weight: false, thickness: true, limits: true, certain: &certain)
        case (false, false, true): return scan(d, w, t, rows: scanned, weight: false, thickness: false, limits: true, certain: &certain)
        }
    }

    @inline(__always)
    private func scan(
        _ d: Double, _ w: Double, _ t: Double, rows count: Int, weight: Bool, thickness: Bool, limits: Bool, certain: inout Bool
    ) -> Match {
        // Own rows keep the nearest two; foreign rows the nearest one.
        var nearest = UInt64.max, second = UInt64.max, foreign = UInt64.max
        @inline(__always) func score(_ index: Int) -> UInt64 {
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
                d2 += zt * zt + row.unknownThickness
                if limits { limit = larger(limit, zt * zt * row.thicknessLimit) }
            }
            // `a > b ? a : b` compiles to one maxsd (Swift.max keeps NaN ordering, which costs
            // three more instructions; the figures here are finite).
            let outside = UInt64((limits ? larger(d2, limit) : d2) > 1 ? 1 : 0)
            return d2.bitPattern & ~Self.flagMask | outside << Self.outsideShift | UInt64(index)
        }
        for index in 0..<Swift.min(count, ownCount) {
            let s = score(index)
            second = Swift.min(second, Swift.max(nearest, s))
            nearest = Swift.min(nearest, s)
        }
        for index in ownCount..<Swift.max(count, ownCount) { foreign = Swift.min(foreign, score(index)) }

        certain = false
        @inline(__always) func squared(_ score: UInt64) -> Double { Double(bitPattern: score & ~Self.flagMask) }
        @inline(__always) func index(_ score: UInt64) -> Int { Int(score & Self.indexMask) }
        // The nearest of all must hold the reading.
        guard Swift.min(nearest, foreign) >> Self.outsideShift & 1 == 0 else { return .none }
        if foreign < nearest {
            // A foreign coin is nearest: never credited; ambiguous with the nearest own denomination
            // unless that one is `foreign_odds` times less likely.
            guard nearest != .max, squared(nearest) - squared(foreign) < scaledForeignThreshold else { return .none }
            return .ambiguous(own: index(nearest), other: index(foreign))
        }
        let chosen = index(nearest), chosenSquared = squared(nearest)
        if second != .max {
            // Another denomination must lie farther by the margin, without square roots:
            // r ≥ c + m ⟺ r² − c² − m² ≥ 2mc ≥ 0.
            let excess = squared(second) - chosenSquared - scaledMarginSquared
            guard excess >= 0 && excess * excess >= 4 * scaledMarginSquared * chosenSquared else {
                return .ambiguous(own: chosen, other: index(second))
            }
        }
        if foreign != .max {
            // The reading must be `foreign_odds` times likelier this denomination than any foreign
            // coin: f² − c² ≥ 2 ln(odds). That boundary is the plane between the two, so noise
            // across the line joining them costs nothing.
            let excess = squared(foreign) - chosenSquared
            guard excess >= scaledForeignThreshold else { return .ambiguous(own: chosen, other: index(foreign)) }
        }
        certain = chosenSquared <= certainRadiusSquared
        return .accept(chosen)
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
