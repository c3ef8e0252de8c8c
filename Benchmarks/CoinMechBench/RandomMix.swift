import CoinFacts
import CoinMechChain

/// SplitMix64: a small, seedable generator, so every run measures the same readings.
struct SplitMix64: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A normal variate (Box–Muller).
    mutating func gaussian() -> Double {
        let u = Double.random(in: Double.leastNonzeroMagnitude..<1, using: &self)
        let v = Double.random(in: 0..<1, using: &self)
        return (-2 * _log(u)).squareRoot() * _cos(2 * .pi * v)
    }
}

@inline(__always) func _log(_ x: Double) -> Double { Double.log(x) }
@inline(__always) func _cos(_ x: Double) -> Double { Double.cos(x) }

extension Double {
    static func log(_ x: Double) -> Double { Foundation_log(x) }
    static func cos(_ x: Double) -> Double { Foundation_cos(x) }
}

#if canImport(Glibc)
import Glibc
@inline(__always) func Foundation_log(_ x: Double) -> Double { Glibc.log(x) }
@inline(__always) func Foundation_cos(_ x: Double) -> Double { Glibc.cos(x) }
#endif

/// US coins with measurement noise (σ 0.8 % per axis), plus 10 % slugs and foreign coins.
func randomUSMix(count: Int, seed: UInt64) -> [Reading] {
    var rng = SplitMix64(state: seed)
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
