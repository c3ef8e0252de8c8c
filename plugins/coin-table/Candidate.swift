import CoinFacts
import CoinMechCalibration
import CoinMechPluginKit

/// One coin the matcher scores a reading against: a denomination of the link's currency, which it
/// may accept, or a known foreign coin, which it never credits but which makes a reading near it
/// ambiguous.
struct Candidate {
    enum Origin: String, Encodable {
        /// Mint figures, spread from the mint tolerance and the configured sensor noise.
        case nominal
        /// From the mech's calibration (teach mode).
        case taught
        /// Another currency's coin, placed where this mech would read it.
        case foreign
    }

    let spec: CoinSpec
    let origin: Origin
    let spread: CoinSpread
    /// Hard limits (the `tolerance` keys): relative half-widths around the centre; nil = none.
    let limit: (diameter: Double?, weight: Double?, thickness: Double?)
    /// A foreign coin that only thickness tells from one of the link's own (its centre lies inside
    /// that one's window on diameter and weight): scored only on readings with a thickness, as
    /// without one it would make every such genuine coin ambiguous.
    var onlyWithThickness = false

    var own: Bool { origin != .foreign }

    /// The code for the link's own coins; foreign ones carry their currency ("USD quarter",
    /// "GBP_20p": euro and sterling codes already do).
    var name: String { own || spec.code.hasPrefix(spec.currency) ? spec.code : "\(spec.currency) \(spec.code)" }

    /// Largest ratio of this candidate's σ to `other`'s over diameter and weight: how much a step
    /// measured in this candidate's σ can stretch in `other`'s.
    func sigmaRatio(to other: Candidate) -> Double {
        max(spread.diameter.sigma / other.spread.diameter.sigma, spread.weight.sigma / other.spread.weight.sigma)
    }

    /// Distance of this candidate's centre from `other`'s, in `other`'s σ, over diameter and
    /// (when `withWeight`) weight: thickness is left out, as a reading may lack it.
    func centreDistance(in other: Candidate, withWeight: Bool) -> Double {
        other.spread.distance(diameter: spread.diameter.mean, weight: withWeight ? spread.weight.mean : nil, thickness: nil)
    }
}
