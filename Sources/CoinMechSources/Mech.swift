import CoinMechHotplug
import CoinMechSerial

/// A coin mech as the deciding loop drives it: something to poll, events out, answers in.
/// `SerialMech` is the raw-sensor serial mech; `GPIOMech` a GPIO pulse mech (live or replayed).
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
    /// edge), CLOCK_MONOTONIC ns; nil for none.
    var nextWake: UInt64? { get }
    /// Errors in what the mech sent, by kind.
    var frameErrors: FrameErrorCounts { get }

    /// Connects if disconnected and due, and returns timer-driven events.
    func poll(now: UInt64) -> [MechEvent]
    /// Reads what the descriptor has; `hungUp` is poll's POLLHUP/POLLERR.
    func readEvents(now: UInt64, hungUp: Bool) -> [MechEvent]
    /// Tells the mech to keep (`accept`) or return the coin; false if it could not.
    @discardableResult
    func answer(deviceSeq: UInt64, accept: Bool) -> Bool
    /// How long an answer for `deviceSeq` takes to reach the mech once written, in
    /// nanoseconds (a serial line's bytes at its baud rate; 0 for a GPIO line).
    func answerTransitNanoseconds(deviceSeq: UInt64) -> UInt64
    /// Inhibits the mech (it refuses coins) or lifts it.
    func setInhibit(_ on: Bool)
    /// Whether the mech reports what became of each accepted coin (`$CMC`) and answers
    /// queries about it (`$CMQ`): then an accept is credited only when the mech stores the
    /// coin. False where the reading itself means "stored" (a pulse) or the mech cannot say.
    var confirmsCoins: Bool { get }
    /// Asks the mech what became of coin `deviceSeq` of its session `boot`; false if it
    /// cannot be asked now (disconnected, or a mech that does not confirm).
    @discardableResult
    func query(boot: UInt64, deviceSeq: UInt64) -> Bool
    /// Asks the mech to name its session (boot number); it answers with a `session` event.
    func askSession()
    /// Lets go of the device (at shutdown).
    func disconnect(reason: String, now: UInt64) -> [MechEvent]
    /// udev says the device went away (close it now) or is there (try to open it now, at
    /// `devnode` if the match was by USB identity rather than by path).
    func hotplug(_ change: HotplugTracker.Change, now: UInt64) -> [MechEvent]
}

extension Mech {
    public var confirmsCoins: Bool { false }
    public func query(boot: UInt64, deviceSeq: UInt64) -> Bool { false }
    public func askSession() {}
}
