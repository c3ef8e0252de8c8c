import CoinMechCCTalk
import CoinMechFailpoints

/// What the daemon hands a driver to make its mech: where the ledger left the mech off.
public struct MechContext: Sendable {
    /// The last device sequence number on the ledger (a mech that numbers its coins itself
    /// goes on from it).
    public var lastDeviceSeq: UInt64?
    public var failpoints: Failpoints
    /// A coin acceptor's: its counter on the ledger, who the ledger last identified at its
    /// address, the coin positions the operator allows and the coin ids the chain credits.
    public var acceptor: Acceptor?

    public struct Acceptor: Sendable {
        public var persisted: CCTalkCounterState?
        public var remembered: CCTalkDeviceIdentity?
        public var positions: CoinPositionMask
        public var creditableCoinIDs: Set<String>?

        public init(persisted: CCTalkCounterState?, remembered: CCTalkDeviceIdentity?, positions: CoinPositionMask, creditableCoinIDs: Set<String>?) {
            self.persisted = persisted
            self.remembered = remembered
            self.positions = positions
            self.creditableCoinIDs = creditableCoinIDs
        }
    }

    public init(lastDeviceSeq: UInt64?, failpoints: Failpoints, acceptor: Acceptor? = nil) {
        self.lastDeviceSeq = lastDeviceSeq
        self.failpoints = failpoints
        self.acceptor = acceptor
    }
}
