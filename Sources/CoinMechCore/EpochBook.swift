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

    /// The latest epoch that is session `boot`.
    public func epoch(ofBoot boot: UInt64) -> Int64? {
        boots.filter { $0.value == boot }.map(\.key).max()
    }
}
