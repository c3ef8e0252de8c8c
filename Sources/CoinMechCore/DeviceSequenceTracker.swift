import CoinMechModel

/// Gives every reading an identity that survives the mech's power cycles: (epoch, devseq).
///
/// A mech numbers its readings from 1 after each power-up. The epoch counts power-ups: an
/// announced one (`$CMS,POWERUP`), one the mech's `SESSION` answer shows (a new boot), or, for a
/// mech that cannot name its session, one inferred when numbers go backwards with a different
/// measurement. A sentence with a number already seen and the same measurement is a duplicate:
/// answer it again, never credit it twice. A number going backwards is a `conflict`: one
/// repeated number (a garbled sentence that passed the 1-byte checksum, firmware that measures
/// again) is not evidence enough of a power-up for a mech that can say which boot it is in.
public struct DeviceSequenceTracker: Sendable {
    public enum Classification: Sendable, Equatable {
        /// A coin not seen before, in `epoch`.
        case new(epoch: Int64)
        /// The same sentence again: answer as before.
        case duplicate(epoch: Int64)
        /// Numbers went backwards with a different coin: a power-up nobody announced, or a
        /// garbled number. The tracker has not moved: the caller asks the mech's session, or,
        /// for a mech that cannot say, calls `impliedPowerUp`.
        case conflict(epoch: Int64)
    }

    public private(set) var epoch: Int64
    public private(set) var lastSeq: UInt64?
    private var recent: [UInt64: Measurement] = [:]
    private var order: [UInt64] = []
    private let memory: Int

    /// Starts in `epoch`, after `lastSeq`, remembering `recent` (from the ledger, after a restart).
    public init(epoch: Int64, lastSeq: UInt64?, recent: [(UInt64, Measurement)] = [], memory: Int = 256) {
        self.epoch = epoch
        self.lastSeq = lastSeq
        self.memory = memory
        for (seq, measurement) in recent { remember(seq, measurement) }
    }

    /// The mech announced a power-up.
    public mutating func powerUp() {
        epoch += 1
        lastSeq = nil
        recent.removeAll()
        order.removeAll()
    }

    public mutating func classify(_ seq: UInt64, _ measurement: Measurement) -> Classification {
        if let seen = recent[seq] {
            return seen == measurement ? .duplicate(epoch: epoch) : .conflict(epoch: epoch)
        }
        if let last = lastSeq, seq <= last { return .conflict(epoch: epoch) }
        remember(seq, measurement)
        return .new(epoch: epoch)
    }

    /// A conflicting reading taken as a power-up nobody announced (a mech that cannot name its
    /// session): a new epoch that begins with it. Returns the new epoch.
    public mutating func impliedPowerUp(_ seq: UInt64, _ measurement: Measurement) -> Int64 {
        powerUp()
        remember(seq, measurement)
        return epoch
    }

    private mutating func remember(_ seq: UInt64, _ measurement: Measurement) {
        recent[seq] = measurement
        order.append(seq)
        lastSeq = max(lastSeq ?? 0, seq)
        if order.count > memory { recent[order.removeFirst()] = nil }
    }
}
