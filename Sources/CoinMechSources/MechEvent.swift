import CoinMechSerial

/// One coin's reading as a mech session reports it.
public struct MechReading: Sendable, Equatable {
    public var deviceSeq: UInt64
    public var measurement: Measurement
    /// When the reading left the mech: the mech's deadline counts from here. From the mech's
    /// own clock where its readings carry one (a reading that waited in a buffer while the
    /// daemon was stalled is known for what it is), else from `readAt`.
    public var sentAt: Instant
    /// When the host read it off the line (or the GPIO edge's kernel timestamp).
    public var readAt: Instant
    /// A source that already knows the coin cannot be credited (a merged pulse train) says why
    /// (reason code); the coin is then returned without walking the chain.
    public var rejection: String?

    public init(deviceSeq: UInt64, measurement: Measurement, sentAt: Instant, readAt: Instant? = nil, rejection: String? = nil) {
        self.deviceSeq = deviceSeq
        self.measurement = measurement
        self.sentAt = sentAt
        self.readAt = readAt ?? sentAt
        self.rejection = rejection
    }
}

/// What a mech session reports to the deciding loop.
public enum MechEvent: Sendable, Equatable {
    case reading(MechReading)
    /// The mech says what became of an accepted coin of its current session (`$CMC`).
    case confirmation(deviceSeq: UInt64, fate: CoinFate)
    /// The mech's journal answers a query about coin `deviceSeq` of session `boot` (`$CMJ`).
    case journal(boot: UInt64, deviceSeq: UInt64, fate: CoinFate)
    /// The mech (re)started; device numbers start again. `boot` is its power-up count, when it says.
    case powerUp(boot: UInt64?)
    /// The mech named its current boot number (its answer to the host's hello on connect).
    case session(boot: UInt64)
    case status(MechStatus, detail: String?)
    case connected(path: String)
    case lost(path: String, reason: String)
    /// A stretch of the line that was not a valid sentence (already counted).
    case protocolError(FrameError)
}
