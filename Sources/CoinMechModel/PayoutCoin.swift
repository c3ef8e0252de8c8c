/// A coin a changer pays out: its id (`USD25`) and value in minor units.
public struct PayoutCoin: Sendable, Hashable {
    public var coinID: String?
    public var valueMinor: Int64

    public init(coinID: String?, valueMinor: Int64) {
        self.coinID = coinID
        self.valueMinor = valueMinor
    }
}
