/// One DISPENSE of a payout, journalled before it is sent: `count` coins of the changer's
/// `type`, from a tube the changer counted `tubeBefore` in just before. The tube's fall from
/// there, by the changer's own count, is what the step paid.
public struct PayoutStep: Sendable, Hashable {
    public var type: Int
    public var coinID: String?
    public var valueMinor: Int64
    public var count: Int
    public var tubeBefore: Int
    /// A hopper's event counter just before the step (header 166): the step was taken if the
    /// hopper's counter moved past it. Nil for a changer, whose tubes tell.
    public var deviceMark: Int?
    /// Who was to pay it, where a unit names itself (a hopper: its address, serial number and
    /// coin): after a crash only that unit's counter speaks for the step, even when another was
    /// put in its place earlier in the payout. Nil for a changer (the payout names it).
    public var device: String?

    public init(type: Int, coinID: String?, valueMinor: Int64, count: Int, tubeBefore: Int, deviceMark: Int? = nil, device: String? = nil) {
        self.type = type
        self.coinID = coinID
        self.valueMinor = valueMinor
        self.count = count
        self.tubeBefore = tubeBefore
        self.deviceMark = deviceMark
        self.device = device
    }
}
