/// One payout hopper on the bus as the operator configured it: where it answers and the coin
/// it pays.
public struct CCTalkHopperUnit: Sendable, Hashable {
    public var address: UInt8
    /// The coin it holds (`EU200A`); a hopper that reports another (header 171) pays nothing.
    public var coinID: String
    public var valueMinor: Int64
    /// Dispense with its serial number before the count (the variant some hoppers insist on),
    /// rather than the count alone.
    public var serialDispense: Bool

    public init(address: UInt8, coinID: String, valueMinor: Int64, serialDispense: Bool = false) {
        self.address = address
        self.coinID = coinID
        self.valueMinor = valueMinor
        self.serialDispense = serialDispense
    }
}
