import CoinMechSerial

/// What a mech session reports to the deciding loop.
public enum MechEvent: Sendable, Equatable {
    /// A coin's measurement; `receivedAt` is CLOCK_MONOTONIC nanoseconds. A source that already
    /// knows the coin cannot be credited (a merged pulse train) says why in `rejection`
    /// (reason code); the coin is then returned without walking the chain.
    case reading(deviceSeq: UInt64, measurement: Measurement, receivedAt: UInt64, rejection: String? = nil)
    case status(MechStatus, detail: String?)
    case connected(path: String)
    case lost(path: String, reason: String)
    /// A stretch of the line that was not a valid sentence (already counted).
    case protocolError(FrameError)
}
