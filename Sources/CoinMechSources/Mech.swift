import CoinMechHotplug
import CoinMechModel
import CoinMechSerial

/// A coin mech as the deciding loop drives it: something to poll, events out, answers in.
/// What every mech has; what only some have is in `ConfirmingMech` and `FramedMech`.
/// Owned by the deciding loop's thread.
public protocol Mech: AnyObject {
    /// Where the mech is (device path, chip or file), for logs and status.
    var location: String { get }
    /// The descriptor to poll for input, while connected.
    var descriptor: Int32? { get }
    var isConnected: Bool { get }
    /// Why the last attempt to connect failed, while disconnected.
    var disconnectedReason: String? { get }
    /// The next time `poll(now:)` has work (a reconnect, the end of a pulse train, a replayed
    /// edge); nil for none.
    var nextWake: Instant? { get }
    /// The line its answers travel on; nil when an answer acts at once (a GPIO line).
    var lineTiming: LineTiming? { get }

    /// Connects if disconnected and due, and returns timer-driven events.
    func poll(now: Instant) -> [MechEvent]
    /// Reads what the descriptor has; `hungUp` is poll's POLLHUP/POLLERR.
    func readEvents(now: Instant, hungUp: Bool) -> [MechEvent]
    /// Tells the mech to keep (`accept`) or return the coin; false if it could not.
    @discardableResult
    func answer(deviceSeq: UInt64, accept: Bool) -> Bool
    /// Inhibits the mech (it refuses coins) or lifts it.
    func setInhibit(_ on: Bool)
    /// Lets go of the device (at shutdown).
    func disconnect(reason: String, now: Instant) -> [MechEvent]
    /// udev says the device went away (close it now) or is there (try to open it now, at
    /// `devnode` if the match was by USB identity rather than by path).
    func hotplug(_ change: HotplugTracker.Change, now: Instant) -> [MechEvent]
}

/// A mech that reports what became of each accepted coin (`$CMC`) and answers questions about
/// it (`$CMQ`, `$CMH`): its coins are credited only when it stores them.
public protocol ConfirmingMech: Mech {
    /// Asks the mech what became of coin `deviceSeq` of its session `boot`; false if it cannot
    /// be asked now (disconnected).
    @discardableResult
    func query(boot: UInt64, deviceSeq: UInt64) -> Bool
    /// Asks the mech to name its session (boot number); it answers with a `session` event.
    func askSession()
}

/// A mech whose line carries sentences, some of which arrive broken.
public protocol FramedMech: Mech {
    /// Errors in what the mech sent, by kind.
    var frameErrors: FrameErrorCounts { get }
}
