import CoinMechChain
import CoinSimCore

/// Readings of a coin with the given figures on a mech with relative noise σ per axis (and an
/// optional relative bias), seeded.
func noisyReadings(
    _ d: Double, _ w: Double, _ t: Double?, count: Int, seed: UInt64, noise: (Double, Double, Double), bias: (Double, Double, Double) = (0, 0, 0)
) -> [Reading] {
    var rng = SplitMix64(seed: seed)
    return (0..<count).map { index in
        Reading(deviceSeq: UInt64(index), diameterMM: d * (1 + bias.0) * (1 + noise.0 * rng.gaussian()),
                weightG: w * (1 + bias.1) * (1 + noise.1 * rng.gaussian()),
                thicknessMM: t.map { $0 * (1 + bias.2) * (1 + noise.2 * rng.gaussian()) })
    }
}
