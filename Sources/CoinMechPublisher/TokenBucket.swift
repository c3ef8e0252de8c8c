/// A token bucket: `burst` tokens, refilled at `perSecond`. Pure: the caller passes the time.
struct TokenBucket: Sendable {
    let burst: Double
    let perSecond: Double
    private var tokens: Double
    private var updated: UInt64?

    init(burst: Int, perSecond: Double) {
        self.burst = Double(max(1, burst))
        self.perSecond = max(perSecond, 0.001)
        tokens = self.burst
    }

    /// Takes a token at `now` (nanoseconds of a monotonic clock): nil if there was one, else the
    /// nanoseconds until there is.
    mutating func take(at now: UInt64) -> UInt64? {
        if let updated, now > updated { tokens = min(burst, tokens + Double(now - updated) / 1e9 * perSecond) }
        updated = max(updated ?? now, now)
        if tokens >= 1 {
            tokens -= 1
            return nil
        }
        return UInt64(((1 - tokens) / perSecond * 1e9).rounded(.up))
    }
}
