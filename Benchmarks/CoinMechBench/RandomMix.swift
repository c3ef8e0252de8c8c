import CoinFacts
import CoinMechChain
import CoinSimCore

/// US coins with measurement noise (σ 0.8 % per axis), plus 10 % slugs and foreign coins.
func randomUSMix(count: Int, seed: UInt64) -> [Reading] {
    var rng = SplitMix64(seed: seed)
    return (0..<count).map { index in
        let roll = Double.random(in: 0..<1, using: &rng)
        let diameter: Double, weight: Double
        if roll < 0.9 {
            let coin = CoinTables.usd.randomElement(using: &rng)!
            diameter = coin.diameterMM * (1 + 0.008 * rng.gaussian())
            weight = coin.weightG * (1 + 0.008 * rng.gaussian())
        } else {
            diameter = Double.random(in: 12...32, using: &rng)
            weight = Double.random(in: 1...12, using: &rng)
        }
        return Reading(deviceSeq: UInt64(index), timestampNanoseconds: UInt64(index) * 150_000_000,
                       diameterMM: diameter, weightG: weight, source: "bench")
    }
}
