import CoinMechPluginABI
import CoinMechPluginKit
import Synchronization

/// Follows the mech's drift: how far, per axis, its readings of the coins it credits lie from
/// the windows' centres (a load cell that reads 1.5 % heavy, a diameter gate 0.3 % small, a
/// sensor that slowly wanders), so the windows stay centred where this mech reads the coins.
///
/// Mechs bias every coin alike (the bias is a factor of the sensor, not of the coin), so one
/// factor per axis serves every denomination and the foreign coins with them: the table judges
/// `reading ÷ drift`. The factor is a running mean of `reading ÷ centre` over coins accepted
/// within 2.5σ of their centre (`MatchTable.match(…certain:)`) — the mean of the first ones
/// (weighed against 8 coins at no drift, so a few odd ones cannot swing it) and then of about the
/// last 128 — and never leaves `1 ± limit`. It moves windows, never widens them. Each point it
/// moves is logged, so the journal audits it.
///
/// `update` runs on the deciding path (one thread per instance) and allocates nothing; `current`
/// may be read from any thread.
final class DriftFollower {
    /// Coins at no drift that the first accepted coins are weighed against.
    static let prior = 8
    /// About how many recent coins the mean follows once warm.
    static let horizon = 128
    /// How far (relative) any axis moves before the journal hears of it.
    static let logStep = 0.01

    let enabled: Bool
    /// The largest drift followed, relative (0.04 = ±4 %).
    let limit: Double
    private let host: PluginHost

    /// Reading × these: the inverse of each axis's drift, as `Double` bit patterns. Written only
    /// by `update` (one thread), read by it and by `explain`.
    private let inverseDiameter = Atomic<UInt64>(1.0.bitPattern)
    private let inverseWeight = Atomic<UInt64>(1.0.bitPattern)
    private let inverseThickness = Atomic<UInt64>(1.0.bitPattern)
    /// The alloy axis's two conductivities (the sensor's gain at each frequency), the same way.
    private let inverseLow = Atomic<UInt64>(1.0.bitPattern)
    private let inverseHigh = Atomic<UInt64>(1.0.bitPattern)
    private let coins = Atomic<Int>(0)
    private let alloyCoins = Atomic<Int>(0)

    // The deciding thread's own state. One thread touches it (the contract's one validate at a
    // time per instance), so the runtime's exclusivity check — a quarter of the link's time when
    // it was on — is left out.
    @exclusivity(unchecked) private var counts = (diameter: 0, weight: 0, thickness: 0)
    @exclusivity(unchecked) private var band = (diameter: DriftFollower.band(around: 1), weight: DriftFollower.band(around: 1), thickness: DriftFollower.band(around: 1))
    @exclusivity(unchecked) private var alloyCounts = (low: 0, high: 0)
    @exclusivity(unchecked) private var alloyBand = (low: DriftFollower.band(around: 1), high: DriftFollower.band(around: 1))
    @exclusivity(unchecked) private var loggedAtBound = false
    /// An axis is at its bound past `enterBound`, and stays there until back inside `leaveBound`
    /// (half a step in), so a drift resting on the bound is not logged on every coin.
    private let enterBound, leaveBound: (low: Double, high: Double)
    private let message: UnsafeMutableBufferPointer<UInt8>

    /// The inverse's bounds: 1 / (1 + limit) and 1 / (1 − limit).
    private let lowestInverse, highestInverse: Double

    init(enabled: Bool, limit: Double, host: PluginHost) {
        self.enabled = enabled
        self.limit = limit
        lowestInverse = 1 / (1 + limit)
        highestInverse = 1 / (1 - limit)
        enterBound = (1 / (1 + limit - 1e-9), 1 / (1 - limit + 1e-9))
        leaveBound = (1 / (1 + limit - Self.logStep / 2), 1 / (1 - limit + Self.logStep / 2))
        self.host = host
        message = .allocate(capacity: 256)
        message.initialize(repeating: 0)
    }

    deinit { message.deallocate() }

    /// The factors to multiply a reading's figures by before matching.
    @inline(__always)
    var factors: (diameter: Double, weight: Double, thickness: Double) {
        (Double(bitPattern: inverseDiameter.load(ordering: .relaxed)), Double(bitPattern: inverseWeight.load(ordering: .relaxed)),
         Double(bitPattern: inverseThickness.load(ordering: .relaxed)))
    }

    /// The factors to multiply a reading's conductivities by before matching.
    @inline(__always)
    var alloyFactors: (low: Double, high: Double) {
        (Double(bitPattern: inverseLow.load(ordering: .relaxed)), Double(bitPattern: inverseHigh.load(ordering: .relaxed)))
    }

    /// The drift followed so far (1 = none) and from how many accepted coins.
    var current: (diameter: Double, weight: Double, thickness: Double, coins: Int) {
        let i = factors
        return (1 / i.diameter, 1 / i.weight, 1 / i.thickness, coins.load(ordering: .relaxed))
    }

    /// The alloy axis's drift so far (1 = none) and from how many coins with the axis.
    var currentAlloy: (low: Double, high: Double, coins: Int) {
        let i = alloyFactors
        return (1 / i.low, 1 / i.high, alloyCoins.load(ordering: .relaxed))
    }

    /// Learns the alloy axis's drift from a coin accepted within 2.5σ of its centre on both its
    /// geometry and its alloy: its conductivities as judged and the reciprocal of the centres.
    /// Bounded by the same `limit`; a coin beyond 2.5σ teaches nothing, so no slug credited at a
    /// window's edge can walk it.
    @inline(__always)
    func updateAlloy(judgedLow low: Double, high: Double, reciprocalCentre: (low: Double, high: Double)) {
        guard enabled else { return }
        step(&alloyCounts.low, low * reciprocalCentre.low, inverseLow)
        step(&alloyCounts.high, high * reciprocalCentre.high, inverseHigh)
        alloyCoins.add(1, ordering: .relaxed)
        let i = alloyFactors
        if i.low <= alloyBand.low.low || i.low >= alloyBand.low.high || i.high <= alloyBand.high.low || i.high >= alloyBand.high.high {
            alloyBand = (Self.band(around: 1 / i.low), Self.band(around: 1 / i.high))
            let geometry = factors
            report((1 / geometry.diameter, 1 / geometry.weight, 1 / geometry.thickness), atBound: loggedAtBound)
        }
    }

    /// Learns from a coin accepted within 2.5σ of its centre: its figures as the table judged
    /// them (the drift taken out) and the reciprocal of the centre of the window that took it. An
    /// axis the reading or the window lacks (0) teaches nothing.
    ///
    /// With q = judged ÷ centre, the drift d = 1 / inverse moves as d ← d (1 + w (q − 1)); the
    /// inverse is updated as inverse ← inverse (1 − w (q − 1)), the same to within w²(q − 1)²
    /// (under 10⁻⁴ of a step), so no division is made once warm.
    @inline(__always)
    func update(judged d: Double, _ w: Double, _ t: Double, reciprocalCentre: (diameter: Double, weight: Double, thickness: Double),
                hasWeight: Bool, hasThickness: Bool) {
        guard enabled else { return }
        step(&counts.diameter, d * reciprocalCentre.diameter, inverseDiameter)
        if hasWeight { step(&counts.weight, w * reciprocalCentre.weight, inverseWeight) }
        if hasThickness && reciprocalCentre.thickness > 0 { step(&counts.thickness, t * reciprocalCentre.thickness, inverseThickness) }
        coins.add(1, ordering: .relaxed)
        // Compared in the inverse's terms, so a coin costs no division: the bands were worked
        // out when the journal last heard of the drift.
        let i = factors
        let atBound = loggedAtBound
            ? i.diameter <= leaveBound.low || i.diameter >= leaveBound.high || i.weight <= leaveBound.low || i.weight >= leaveBound.high
                || i.thickness <= leaveBound.low || i.thickness >= leaveBound.high
            : i.diameter <= enterBound.low || i.diameter >= enterBound.high || i.weight <= enterBound.low || i.weight >= enterBound.high
                || i.thickness <= enterBound.low || i.thickness >= enterBound.high
        let moved = i.diameter <= band.diameter.low || i.diameter >= band.diameter.high || i.weight <= band.weight.low
            || i.weight >= band.weight.high || i.thickness <= band.thickness.low || i.thickness >= band.thickness.high
        if moved || atBound != loggedAtBound {
            let drift = (diameter: 1 / i.diameter, weight: 1 / i.weight, thickness: 1 / i.thickness)
            band = (Self.band(around: drift.diameter), Self.band(around: drift.weight), Self.band(around: drift.thickness))
            loggedAtBound = atBound
            report(drift, atBound: atBound)
        }
    }

    /// The inverses at which a drift has moved a step from `drift`.
    private static func band(around drift: Double) -> (low: Double, high: Double) {
        let step = logStep - 1e-9
        return (1 / (drift + step), 1 / (drift - step))
    }

    @inline(__always)
    private func step(_ count: inout Int, _ q: Double, _ inverse: borrowing Atomic<UInt64>) {
        count += 1
        let weight = count < Self.horizon - Self.prior ? 1 / Double(count + Self.prior) : 1 / Double(Self.horizon)
        let value = Double(bitPattern: inverse.load(ordering: .relaxed))
        inverse.store(min(max(value * (1 - weight * (q - 1)), lowestInverse), highestInverse).bitPattern, ordering: .relaxed)
    }

    /// "coin-table: following the mech's drift from 120 coins: diameter -0.3 %, weight +1.5 %,
    /// thickness +3.0 % (bound ±4.0 %)", written into the buffer made at creation.
    private func report(_ drift: (diameter: Double, weight: Double, thickness: Double), atBound: Bool) {
        var out = ASCIIWriter(message)
        out.append("following the mech's drift from ")
        out.append(integer: coins.load(ordering: .relaxed))
        out.append(" coins: diameter ")
        out.append(percent: drift.diameter - 1)
        out.append(", weight ")
        out.append(percent: drift.weight - 1)
        out.append(", thickness ")
        out.append(percent: drift.thickness - 1)
        if alloyCoins.load(ordering: .relaxed) > 0 {
            let alloy = alloyFactors
            out.append("; alloy from ")
            out.append(integer: alloyCoins.load(ordering: .relaxed))
            out.append(" coins: low ")
            out.append(percent: 1 / alloy.low - 1)
            out.append(", high ")
            out.append(percent: 1 / alloy.high - 1)
        }
        out.append(" (bound ±")
        out.append(percent: limit, signed: false)
        out.append(")")
        if atBound { out.append(": an axis is at its bound, so the mech may need service or teaching") }
        out.terminate()
        message.withMemoryRebound(to: CChar.self) { host.log(atBound ? COINMECH_LOG_WARNING : COINMECH_LOG_INFO, cString: $0.baseAddress!) }
    }
}
