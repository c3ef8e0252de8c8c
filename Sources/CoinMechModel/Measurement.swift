/// The measurement part of a reading, to tell a repeated sentence from a new coin.
public struct Measurement: Sendable, Hashable {
    public var diameterMM: Double?
    public var weightG: Double?
    public var thicknessMM: Double?
    public var channel: UInt32?
    /// The alloy axis, from a mech with an eddy-current sensor.
    public var alloy: AlloySignature?

    public init(diameterMM: Double?, weightG: Double?, thicknessMM: Double?, channel: UInt32?, alloy: AlloySignature? = nil) {
        self.diameterMM = diameterMM
        self.weightG = weightG
        self.thicknessMM = thicknessMM
        self.channel = channel
        self.alloy = alloy
    }
}
