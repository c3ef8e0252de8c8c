/// One coin's measurement as the mech delivered it.
public struct Reading: Sendable, Hashable {
    /// The mech's own sequence number (restarts when the mech powers up).
    public var deviceSeq: UInt64
    /// CLOCK_MONOTONIC, in nanoseconds, when the reading arrived.
    public var timestampNanoseconds: UInt64
    public var diameterMM: Double?
    public var weightG: Double?
    public var thicknessMM: Double?
    /// Pulse count, for pulse mechs.
    public var channel: UInt32?
    /// Name of the source that produced it (e.g. "serial").
    public var source: String

    public init(
        deviceSeq: UInt64, timestampNanoseconds: UInt64 = 0, diameterMM: Double? = nil, weightG: Double? = nil,
        thicknessMM: Double? = nil, channel: UInt32? = nil, source: String = "test"
    ) {
        self.deviceSeq = deviceSeq
        self.timestampNanoseconds = timestampNanoseconds
        self.diameterMM = diameterMM
        self.weightG = weightG
        self.thicknessMM = thicknessMM
        self.channel = channel
        self.source = source
    }
}
