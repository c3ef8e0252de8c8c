/// How an `MDBChangerHost` paces the bus: the defaults follow what field hosts of MDB changers
/// do (temoto/vender, Aardvark Paylink) and the adapter's limits.
public struct MDBChangerHostConfiguration: Sendable, Hashable {
    /// Between two POLLs while running.
    public var pollIntervalNanoseconds: UInt64 = 100_000_000
    /// A line with no reply by then is unanswered: the adapter's own response timeout, the
    /// line at 115200 baud and a loaded host.
    public var replyTimeoutNanoseconds: UInt64 = 500_000_000
    /// What the adapter waits for the changer (`F,RESPTIMEOUT`): MDB says 5 ms, changers take more.
    public var responseTimeoutMilliseconds = 100
    /// After RESET, before the first POLL: a changer needs this to come back.
    public var resetSettleNanoseconds: UInt64 = 500_000_000
    /// POLLs that may pass without "changer was reset" before the host sets it up anyway.
    public var justResetPolls = 10
    /// TUBE STATUS while running, to catch coins a technician loaded or took by hand.
    public var tubeStatusIntervalNanoseconds: UInt64 = 25_000_000_000
    /// How long a changer may go without a usable answer before it counts as gone (MDB gives a
    /// changer seconds of non-response, during a payout for instance). Each unanswered step is
    /// tried again after `pollIntervalNanoseconds`.
    public var nonResponseNanoseconds: UInt64 = 2_000_000_000
    /// After a DISPENSE, a POLL that does not say "payout busy" ends the payout only once one
    /// did, or this long after it was written (a changer may start paying a moment later).
    public var payoutStartNanoseconds: UInt64 = 500_000_000
    /// "Payout busy" for longer than this is not believed: the tubes are counted anyway
    /// (15 coins at the slowest field changer's 3 a second, with room).
    public var payoutTimeoutNanoseconds: UInt64 = 10_000_000_000
    /// Held for a payout, the changer is still once a POLL says nothing this long after it
    /// acknowledged COIN TYPE 0: a coin it was validating has reached its tube by then.
    public var stillNanoseconds: UInt64 = 300_000_000
    /// A changer that stopped answering is set up again from the start this often.
    public var reconnectIntervalNanoseconds: UInt64 = 2_000_000_000
    /// The level-3 features the host switches on where the changer offers them.
    public var features: MDBChangerIdentity.Features = [.alternativePayout, .extendedDiagnostics]
    /// Coin types whose manual dispense buttons work (bit n: type n): a technician's payout
    /// from the buttons is reported and recorded.
    public var manualDispense: UInt16 = 0xFFFF

    public init() {}
}
