/// One DISPENSE of a payout, journalled before it is sent: `count` coins of the changer's
/// `type`, from a tube the changer counted `tubeBefore` in just before. The tube's fall from
/// there, by the changer's own count, is what the step paid.
///
/// Or one value step (MDB level 3's alternative payout): `valueMinor` paid in coins the changer
/// chooses, every tube counted at `tubesBefore` just before; `type` is `PayoutStep.anyType`,
/// `count` 1. Every tube's fall from there is what it paid.
public struct PayoutStep: Sendable, Hashable {
    /// The `type` of a value step: the changer chooses.
    public static let anyType = -1

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
    /// A value step's count of every tube just before it; nil for a DISPENSE.
    public var tubesBefore: [Int]?

    /// Whether the changer chooses the coins (a value step).
    public var paysValue: Bool { tubesBefore != nil }

    /// A value step of `valueMinor`, every tube counted at `tubesBefore` just before.
    public static func value(_ valueMinor: Int64, tubesBefore: [Int]) -> PayoutStep {
        var step = PayoutStep(type: anyType, coinID: nil, valueMinor: valueMinor, count: 1, tubeBefore: 0)
        step.tubesBefore = tubesBefore
        return step
    }

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
