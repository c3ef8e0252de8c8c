/// A payout hopper's own account of its last payout (header 166), which it keeps through a
/// power cut: what a host that died mid-payout settles from.
///
/// - `eventCounter` counts the dispenses the hopper took: 0 after a power-up or reset, then
///   1 to 255 and round to 1 again. A dispense whose reply was lost was taken if it moved.
/// - `remaining`: coins still to pay in the payout under way (0 when it is over).
/// - `lastPaid`, `lastUnpaid`: coins the last payout paid, and left unpaid when it stopped
///   (empty, jammed, stopped, or power lost: `CCTalkHopperRegisters.powerDownDuringPayout`).
public struct CCTalkHopperStatus: Sendable, Hashable, CustomStringConvertible {
    public var eventCounter: UInt8
    public var remaining: UInt8
    public var lastPaid: UInt8
    public var lastUnpaid: UInt8

    public init(eventCounter: UInt8, remaining: UInt8, lastPaid: UInt8, lastUnpaid: UInt8) {
        self.eventCounter = eventCounter
        self.remaining = remaining
        self.lastPaid = lastPaid
        self.lastUnpaid = lastUnpaid
    }

    /// The counter after `taken` more dispenses from `counter` (255 wraps to 1; 0 is only the
    /// power-up value).
    public static func counter(_ counter: UInt8, after taken: Int) -> UInt8 {
        var value = Int(counter)
        for _ in 0..<max(taken, 0) { value = value >= 255 ? 1 : value + 1 }
        return UInt8(value)
    }

    public var description: String {
        "event \(eventCounter), \(remaining) to pay, last payout \(lastPaid) paid \(lastUnpaid) unpaid"
    }
}
