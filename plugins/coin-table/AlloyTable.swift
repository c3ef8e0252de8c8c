import CoinMechPluginABI
import CoinMechPluginKit
import Foundation

/// The scan for readings that carry the alloy axis: every composition of every coin the link
/// knows, scored on diameter, weight, thickness and the alloy together, in buffers allocated
/// once (deciding allocates nothing and touches no reference count).
///
/// A reading is accepted as the nearest composition of the link's own coins when that
/// composition's windows hold it — the coin's geometry window as without the axis, and its alloy
/// window (`alloy.window` σ over the conductivities and the permeability) — every other
/// denomination is farther by the margin and every foreign composition `foreign_odds` times less
/// likely, all on the combined distance. A reading whose diameter, weight and thickness fit one
/// of the link's coins and whose metal fits none is rejected as `wrong_alloy`: a slug, a washer,
/// a foreign twin or a copy.
final class AlloyTable {
    struct Row {
        /// Geometry, as the plain scan scores it (in window units).
        let geometry: MatchTable.Row
        /// Centres (% IACS) and 1/σ per frequency; the centres for readings without a thickness.
        let low, lowScale, high, highScale, lowUnmeasured, highUnmeasured: Double
        /// ln(permeability) and 1/σ.
        let logPermeability, logPermeabilityScale: Double
        /// Index of the own denomination (into `CandidateList.own`); -1 for a foreign coin.
        let own: Int
        /// 1/centre per frequency, for the drift.
        let reciprocalLow, reciprocalHigh: Double
    }

    /// What the scan found.
    enum Match: Equatable {
        case none
        /// Own row `row` is nearest and its windows hold the reading.
        case accept(row: Int)
        /// Nearest holds it but another denomination is within the margin, or a foreign coin within the odds.
        case ambiguous(row: Int, other: Int)
        /// The geometry of own denomination `own` and none of its metal.
        case wrongAlloy(own: Int)
        /// A figure no metal gives (the field named by the index into `AlloyTable.badFields`).
        case badAlloy(field: Int)
    }

    let ownRows: Int
    private let rowCount: Int
    private let rows: UnsafeMutableBufferPointer<Row>
    private let accepts: UnsafeMutableBufferPointer<DecisionTemplate>
    /// `ambiguous[ownRow * rowCount + other]`.
    private let ambiguous: UnsafeMutableBufferPointer<DecisionTemplate>
    private let wrongAlloy: UnsafeMutableBufferPointer<DecisionTemplate>
    private let bad: UnsafeMutableBufferPointer<DecisionTemplate>
    let geometryWindowSquared, alloyWindowSquared, marginSquared, margin, foreignThreshold: Double
    /// Within this (σ², each part) of its centre an accepted coin teaches the drift.
    static let certainSquared = MatchTable.certainRadius * MatchTable.certainRadius

    /// The fields a figure may be wrong in, and their reasons.
    static let badFields: [(reason: String, field: String)] = [
        ("bad_conductivity_low", "conductivity_low"), ("bad_conductivity_high", "conductivity_high"), ("bad_permeability", "permeability"),
    ]
    /// Figures beyond these are not measurements: silver, the best conductor, is 108 % IACS.
    static let iacsLimit = 150.0
    static let permeabilityLimit = 100_000.0
    /// The host's: the smallest the serial line's three decimals carry.
    static let permeabilityMinimum = 0.001

    init(_ list: CandidateList, _ alloy: AlloyCandidateList) {
        let all = alloy.all
        ownRows = alloy.own.count
        rowCount = all.count
        let window = list.window
        geometryWindowSquared = window * window
        alloyWindowSquared = alloy.window * alloy.window
        margin = list.margin
        marginSquared = list.margin * list.margin
        foreignThreshold = 2 * log(list.foreignOdds)
        rows = .allocate(capacity: max(1, all.count))
        _ = rows.initialize(from: all.map { row in
            let a = row.alloy
            return Row(geometry: MatchTable.Row(row.candidate, window: window), low: a.low.mean, lowScale: 1 / a.low.sigma, high: a.high.mean,
                       highScale: 1 / a.high.sigma, lowUnmeasured: a.lowUnmeasured, highUnmeasured: a.highUnmeasured,
                       logPermeability: a.logPermeability.mean, logPermeabilityScale: 1 / a.logPermeability.sigma, own: row.own ?? -1,
                       reciprocalLow: 1 / max(a.low.mean, 1e-9), reciprocalHigh: 1 / max(a.high.mean, 1e-9))
        })
        accepts = .allocate(capacity: max(1, list.own.count))
        _ = accepts.initialize(from: list.own.map { .accept(currency: $0.spec.currency, code: $0.spec.code, valueMinor: $0.spec.valueMinor) })
        ambiguous = .allocate(capacity: max(1, alloy.own.count * all.count))
        _ = ambiguous.initialize(from: alloy.own.flatMap { own in
            all.map { other in
                DecisionTemplate.reject(reason: "ambiguous", message: "could be \(own.name) or \(other.name): too close to both to tell, returned")
            }
        })
        wrongAlloy = .allocate(capacity: max(1, list.own.count))
        _ = wrongAlloy.initialize(from: list.own.map {
            .reject(reason: "wrong_alloy", message: "the size and weight of \($0.name) but not its metal (a slug, washer, copy or foreign coin?): returned")
        })
        bad = .allocate(capacity: Self.badFields.count)
        _ = bad.initialize(from: Self.badFields.map {
            .reject(reason: $0.reason, message: "\($0.field) is not a measurement (NaN, negative or beyond every metal): returned")
        })
    }

    deinit {
        rows.deallocate()
        accepts.deallocate()
        ambiguous.deallocate()
        wrongAlloy.deallocate()
        bad.deallocate()
    }

    /// The denomination (index into `CandidateList.own`) of own row `row`.
    @inline(__always) func own(of row: Int) -> Int { rows[row].own }

    /// 1/centre of row `row`'s window on each frequency (for the drift).
    @inline(__always) func reciprocalCentre(of row: Int) -> (low: Double, high: Double) { (rows[row].reciprocalLow, rows[row].reciprocalHigh) }

    /// Whether the alloy figures could be measurements; the field at fault otherwise.
    @inline(__always)
    static func fault(low: Double, high: Double, permeability: Double?) -> Int? {
        if !(low.isFinite && low >= 0 && low <= iacsLimit) { return 0 }
        if !(high.isFinite && high >= 0 && high <= iacsLimit) { return 1 }
        if let permeability, !(permeability.isFinite && permeability >= permeabilityMinimum && permeability <= permeabilityLimit) { return 2 }
        return nil
    }

    /// Scores every row for a reading (figures finite, drift taken out); `certain` says whether an
    /// accept lies within `MatchTable.certainRadius` σ of its centre on both the geometry and the alloy.
    func match(_ d: Double, _ w: Double, _ t: Double, hasWeight: Bool, hasThickness: Bool, low: Double, high: Double, permeability: Double?,
               certain: inout Bool) -> Match {
        certain = false
        let logPermeability = permeability.map { Foundation.log($0) } ?? 0
        let hasPermeability = permeability != nil
        // Own rows: the nearest, and the nearest of another denomination; the foreign nearest;
        // the own row whose geometry alone is nearest (for `wrong_alloy`).
        var best = (d2: Double.infinity, row: -1), second = (d2: Double.infinity, row: -1), foreign = (d2: Double.infinity, row: -1)
        var geometryBest = (g: Double.infinity, row: -1)
        var bestHolds = false, foreignHolds = false, bestParts = (g: 0.0, a: 0.0)
        for index in 0..<rowCount {
            let row = rows[index]
            let g = row.geometry
            let zd = (d - g.diameter) * g.diameterScale
            var gw = zd * zd, limit = zd * zd * g.diameterLimit
            if hasWeight {
                let zw = (w - g.weight) * g.weightScale
                gw += zw * zw
                limit = Swift.max(limit, zw * zw * g.weightLimit)
            }
            if hasThickness {
                let zt = (t - g.thickness) * g.thicknessScale
                gw += zt * zt + g.unknownThickness
                limit = Swift.max(limit, zt * zt * g.thicknessLimit)
            }
            let geometryHolds = Swift.max(gw, limit) <= 1
            let g2 = gw * geometryWindowSquared
            let zl = (low - (hasThickness ? row.low : row.lowUnmeasured)) * row.lowScale
            let zh = (high - (hasThickness ? row.high : row.highUnmeasured)) * row.highScale
            var a2 = zl * zl + zh * zh
            if hasPermeability {
                let zm = (logPermeability - row.logPermeability) * row.logPermeabilityScale
                a2 += zm * zm
            }
            let d2 = g2 + a2
            let inside = geometryHolds && a2 <= alloyWindowSquared
            if index < ownRows {
                if geometryHolds && g2 < geometryBest.g { geometryBest = (g2, index) }
                if best.row >= 0 && row.own == rows[best.row].own {
                    if d2 < best.d2 { (best, bestHolds, bestParts) = ((d2, index), inside, (g2, a2)) }
                } else if d2 < best.d2 {
                    second = best
                    (best, bestHolds, bestParts) = ((d2, index), inside, (g2, a2))
                } else if d2 < second.d2 {
                    second = (d2, index)
                }
            } else if d2 < foreign.d2 {
                (foreign, foreignHolds) = ((d2, index), inside)
            }
        }
        let foreignNearest = foreign.d2 < best.d2
        guard foreignNearest ? foreignHolds : bestHolds else {
            // Nothing the link knows is this coin: if its size and weight are one of the link's
            // own, its metal gave it away.
            return geometryBest.row >= 0 ? .wrongAlloy(own: rows[geometryBest.row].own) : .none
        }
        if foreignNearest {
            // A foreign coin: never credited; ambiguous with the nearest own one unless that is
            // `foreign_odds` times less likely.
            guard best.row >= 0, bestHolds, best.d2 - foreign.d2 < foreignThreshold else { return .none }
            return .ambiguous(row: best.row, other: foreign.row)
        }
        if second.row >= 0 {
            let excess = second.d2 - best.d2 - marginSquared
            guard excess >= 0 && excess * excess >= 4 * marginSquared * best.d2 else { return .ambiguous(row: best.row, other: second.row) }
        }
        if foreign.row >= 0, foreign.d2 - best.d2 < foreignThreshold { return .ambiguous(row: best.row, other: foreign.row) }
        certain = bestParts.g <= Self.certainSquared && bestParts.a <= Self.certainSquared
        return .accept(row: best.row)
    }

    /// Writes the verdict of `match`; `.none` leaves the decision PASS.
    @inline(__always)
    func write(_ match: Match, to decision: UnsafeMutablePointer<coinmech_decision>) {
        switch match {
        case .none: return
        case .accept(let row): DecisionTemplate.write(accepts.baseAddress! + rows[row].own, to: decision)
        case .ambiguous(let row, let other): DecisionTemplate.write(ambiguous.baseAddress! + row * rowCount + other, to: decision)
        case .wrongAlloy(let own): DecisionTemplate.write(wrongAlloy.baseAddress! + own, to: decision)
        case .badAlloy(let field): DecisionTemplate.write(bad.baseAddress! + field, to: decision)
        }
    }
}
