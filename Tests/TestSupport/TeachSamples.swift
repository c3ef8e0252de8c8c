import CoinMechCore
import CoinSimCore

/// Sample coins for teach mode: two close euro coins' mint figures, and seeded noisy readings of them.
enum TeachSamples {
    static let fifty = (diameter: 24.25, weight: 7.80, thickness: 2.38)
    static let euro = (diameter: 23.25, weight: 7.50, thickness: 2.33)

    /// `count` readings of a coin with 0.6 % / 2 % / 2 % noise, from device seq `first`.
    static func samples(_ coin: (diameter: Double, weight: Double, thickness: Double), count: Int, seed: UInt64, first: UInt64 = 1) -> [TeachSession.Sample] {
        var random = SplitMix64(seed: seed)
        return (0..<count).map { index in
            TeachSession.Sample(epoch: 1, deviceSeq: first + UInt64(index), diameterMM: coin.diameter * (1 + 0.006 * random.gaussian()),
                                weightG: coin.weight * (1 + 0.02 * random.gaussian()), thicknessMM: coin.thickness * (1 + 0.02 * random.gaussian()))
        }
    }
}
