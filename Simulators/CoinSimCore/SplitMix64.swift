#if canImport(Glibc)
import Glibc
#endif

/// SplitMix64: small, fast and seedable, so a scenario with a seed replays exactly.
public struct SplitMix64: RandomNumberGenerator, Sendable {
    private var state: UInt64

    public init(seed: UInt64) { state = seed }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A standard normal variate (Box–Muller).
    public mutating func gaussian() -> Double {
        let u = Double.random(in: Double.leastNonzeroMagnitude..<1, using: &self)
        let v = Double.random(in: 0..<1, using: &self)
        return (-2 * log(u)).squareRoot() * cos(2 * Double.pi * v)
    }

    /// An exponential variate with the given mean (gaps of a Poisson process).
    public mutating func exponential(mean: Double) -> Double {
        -mean * log(Double.random(in: Double.leastNonzeroMagnitude..<1, using: &self))
    }

    /// True with probability `p`.
    public mutating func chance(_ p: Double) -> Bool { p > 0 && Double.random(in: 0..<1, using: &self) < p }
}
