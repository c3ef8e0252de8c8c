/// Which of the mech's sessions (boots) each epoch of the ledger is.
///
/// An epoch counts the mech's power-ups as the host saw them; a boot number is the mech's own
/// count, which it names on power-up (`$CMS,POWERUP,<boot>`) and when the host says hello on
/// connect (`$CMS,SESSION,<boot>`). With both, a query about an old coin reaches the right
/// session, and a power-up that happened while nobody listened is seen at the next connect.
public struct EpochBook: Sendable, Equatable {
    /// Boot numbers known, by epoch.
    public private(set) var boots: [Int64: UInt64]

    public init(boots: [Int64: UInt64] = [:]) {
        self.boots = boots
    }

    /// What the mech's `SESSION` means for the current epoch.
    public enum SessionOutcome: Sendable, Equatable {
        /// The mech is still in the current epoch's session.
        case same
        /// The current epoch had no boot number yet: it is this session.
        case assigned
        /// The mech powered up while the host was away: start a new epoch with this boot.
        case newEpoch
    }

    public func session(_ boot: UInt64, currentEpoch: Int64) -> SessionOutcome {
        switch boots[currentEpoch] {
        case boot: .same
        case nil: .assigned
        default: .newEpoch
        }
    }

    /// `epoch` is the mech's session `boot` (nil: it did not say).
    public mutating func record(epoch: Int64, boot: UInt64?) {
        if let boot { boots[epoch] = boot }
    }

    /// The boot number to ask the mech's journal by about `epoch`'s coins. None when the mech
    /// never named that session, or when a later epoch named the same number: boot numbers are
    /// the mech's own count and should never repeat, so once one does (a counter reset by a
    /// firmware update or a wiped EEPROM), the journal for it speaks of the later session, and
    /// an answer to "boot N, coin K" cannot be told apart from the older coin's.
    public func askableBoot(ofEpoch epoch: Int64) -> UInt64? {
        guard let boot = boots[epoch], !boots.contains(where: { $0.key > epoch && $0.value == boot }) else { return nil }
        return boot
    }

    /// The latest epoch before `epoch` that named `boot` too: a repeated boot number.
    public func earlierEpoch(naming boot: UInt64, before epoch: Int64) -> Int64? {
        boots.filter { $0.key < epoch && $0.value == boot }.map(\.key).max()
    }

    /// The latest epoch that is session `boot`.
    public func epoch(ofBoot boot: UInt64) -> Int64? {
        boots.filter { $0.value == boot }.map(\.key).max()
    }
}
