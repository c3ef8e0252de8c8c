/// How long decisions took, from the reading's arrival to its answer, in fixed buckets: what
/// `status` reports and the bridge exports as `coinmech_decision_seconds`. Counting is a few
/// comparisons per answer, on the deciding path.
public struct LatencyHistogram: Sendable, Equatable {
    /// Upper bounds of the buckets in microseconds; a last bucket (+Inf) takes the rest.
    public static let boundsMicroseconds: [UInt64] = [250, 500, 1_000, 2_000, 5_000, 10_000, 20_000, 50_000, 100_000, 250_000, 500_000, 1_000_000]
    /// Per bucket (not cumulative), one more than the bounds for +Inf.
    public private(set) var counts = [UInt64](repeating: 0, count: LatencyHistogram.boundsMicroseconds.count + 1)
    public private(set) var sumMicroseconds: UInt64 = 0
    public private(set) var count: UInt64 = 0

    public init() {}

    public mutating func record(microseconds: UInt64) {
        var index = 0
        while index < Self.boundsMicroseconds.count && microseconds > Self.boundsMicroseconds[index] { index += 1 }
        counts[index] += 1
        sumMicroseconds &+= microseconds
        count += 1
    }
}
