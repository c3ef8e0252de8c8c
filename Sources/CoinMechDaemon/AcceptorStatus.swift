import CoinMechCore
import CoinMechModel
import CoinMechProtocol

/// What `status` shows of a mech that takes coins itself (a ccTalk acceptor, an MDB changer):
/// its driver's own word (`DeviceStatus`, each driver's hook), what the acceptor core
/// recorded, and the hoppers' levels as the payout core keeps them. Lost events and lost
/// replies are raised loudly: coins may have been taken without credit.
public struct AcceptorStatus: Sendable {
    public var device: DeviceStatus
    public var counts: AcceptorCounts
    public var ledgerFailure: String?
    public var levels: [Int]

    /// `lostSinceCollect`: the ledger's count of lost events since the cash box was last emptied.
    func reply(lostSinceCollect: Int?) -> StatusReply.Acceptor {
        var reply = StatusReply.Acceptor(device: device)
        reply.counts.credited = counts.credited
        reply.counts.uncredited = counts.uncredited
        reply.counts.errorEvents = counts.errorEvents
        reply.counts.backlog = counts.backlog
        reply.counts.lostEvents = max(lostSinceCollect ?? 0, counts.lostEvents)
        reply.counts.restarts = counts.restarts
        reply.counts.duplicates = counts.duplicates
        reply.counts.lostReplies = counts.lostReplies
        reply.ledgerFailure = ledgerFailure
        reply.levels = levels
        return reply
    }
}
