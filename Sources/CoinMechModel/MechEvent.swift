/// What a mech session reports to the deciding loop.
public enum MechEvent: Sendable, Equatable {
    case reading(MechReading)
    /// The mech says what became of an accepted coin of its current session (`$CMC`).
    case confirmation(deviceSeq: UInt64, fate: CoinFate)
    /// The mech's journal answers a query about coin `deviceSeq` of session `boot` (`$CMJ`).
    case journal(boot: UInt64, deviceSeq: UInt64, fate: CoinFate)
    /// The mech (re)started; device numbers start again. `boot` is its power-up count, when it says.
    case powerUp(boot: UInt64?)
    /// The mech named its current boot number (its answer to the host's hello on connect).
    case session(boot: UInt64)
    case status(MechStatus, detail: String?)
    case connected(path: String)
    case lost(path: String, reason: String)
    /// A stretch of the line that was not a valid sentence (already counted).
    case protocolError(FrameError)
}
