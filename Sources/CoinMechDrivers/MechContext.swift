import CoinMechCCTalk
import CoinMechFailpoints
import CoinMechModel

/// What the daemon hands a driver to make its mech: where the ledger left the mech off.
public struct MechContext: Sendable {
    /// The last device sequence number on the ledger (a mech that numbers its coins itself
    /// goes on from it).
    public var lastDeviceSeq: UInt64?
    public var failpoints: Failpoints
    /// A coin acceptor's (ccTalk, MDB): its counter row on the ledger, what the ledger last
    /// recorded of who answered at its address, the coin positions the operator allows and the
    /// coin ids the chain credits.
    public var acceptor: Acceptor?

    public struct Acceptor: Sendable {
        public var persisted: AcceptorCounter?
        /// The detail of the last `acceptor_identified` event.
        public var remembered: [String: String]?
        public var positions: CoinPositionMask
        public var creditableCoinIDs: Set<String>?

        public init(persisted: AcceptorCounter?, remembered: [String: String]?, positions: CoinPositionMask, creditableCoinIDs: Set<String>?) {
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
