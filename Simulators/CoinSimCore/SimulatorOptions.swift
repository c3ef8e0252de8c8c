/// How a simulator session runs, apart from its scenario: the same for the raw-sensor mech and
/// the ccTalk acceptor.
public struct SimulatorOptions: Sendable {
    /// Keep a symlink to the device end here (updated after each reconnect).
    public var linkPath: String?
    /// Record the session to this frame log.
    public var recordPath: String?
    /// Wait this long after the last coin settled for late decisions and queries.
    public var lingerMilliseconds = 1500.0
    /// Give up if no host opens the device within this time (0: wait forever).
    public var hostTimeoutSeconds = 0.0
    /// Wait between the host opening the device and the first insertion.
    public var settleMilliseconds = 100.0
    /// Insert the next coin as soon as the previous reading is answered (or its deadline
    /// passes) instead of at the scenario's rate: as fast as the protocol allows.
    public var lockstep = false

    public init() {}
}
