/// One DISPENSE of a payout, journalled before it is sent: `count` coins of the changer's
/// `type`, from a tube the changer counted `tubeBefore` in just before. The tube's fall from
/// there, by the changer's own count, is what the step paid.
public struct PayoutStep: Sendable, Hashable {
    public var type: Int
    public var coinID: String?
    public var valueMinor: Int64
    public var count: Int
    public var tubeBefore: Int

    public init(type: Int, coinID: String?, valueMinor: Int64, count: Int, tubeBefore: Int) {
        self.type = type
        self.coinID = coinID
        self.valueMinor = valueMinor
        self.count = count
        self.tubeBefore = tubeBefore
    }
}
