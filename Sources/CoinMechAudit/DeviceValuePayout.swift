/// One value a device paid choosing the coins itself (MDB level 3's alternative payout), as the
/// device's own record has it: what it was asked, what it paid, and in which coins.
public struct DeviceValuePayout: Sendable, Hashable {
    public var askedMinor: Int64
    public var paidMinor: Int64
    public var coins: [Int: Int]

    public init(askedMinor: Int64, paidMinor: Int64, coins: [Int: Int]) {
        self.askedMinor = askedMinor
        self.paidMinor = paidMinor
        self.coins = coins
    }
}
