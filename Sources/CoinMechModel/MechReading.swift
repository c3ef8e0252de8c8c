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
    /// Alloy figures the mech sent that cannot be measurements: the coin is returned with the
    /// fault's reason, without walking the chain, and counted.
    public var alloyFault: AlloyFault?

    public init(deviceSeq: UInt64, measurement: Measurement, sentAt: Instant, readAt: Instant? = nil, rejection: String? = nil,
                alloyFault: AlloyFault? = nil) {
        self.deviceSeq = deviceSeq
        self.measurement = measurement
        self.sentAt = sentAt
        self.readAt = readAt ?? sentAt
        self.rejection = rejection
        self.alloyFault = alloyFault
    }
}
