import CoinMechCore
import CoinMechProtocol
import CoinMechPublisher

extension DaemonControl {
    /// `payout_plan`: how the paying device would pay `amountMinor` from what it holds as last
    /// counted (`PayoutCore.Snapshot.plan`), or the nearest amounts it can pay. Read from
    /// `status`'s snapshot; nothing moves and nothing is recorded.
    func payoutPlan(amountMinor: Int64, currency: String?) throws(CommandError) -> JSON {
        guard let payout = loop.status.payout else {
            throw CommandError(.unavailable, "this mech gives no change: an MDB changer's tubes or ccTalk hoppers (source.hoppers) pay out (source.kind is \(configuration.source.kind))")
        }
        guard let coins = payout.coins, !coins.coins.isEmpty else {
            throw CommandError(.unavailable, "the paying device is not set up yet: the values of its coins are not known")
        }
        if let currency, currency != coins.currency {
            throw CommandError(.badRequest, "the change is paid in \(coins.currency), not \(currency)")
        }
        var reply = PayoutPlanReply(amountMinor: amountMinor, currency: coins.currency, payable: false)
        switch payout.plan(amountMinor) {
        case .exact(let steps):
            reply.payable = true
            reply.coins = steps.map { PaidCoins(type: nil, coinID: coins.coins[$0.type]?.coinID ?? "?", valueMinor: $0.valueMinor, count: Int64($0.count)) }
        case .cannotPayExact(let below, let above):
            reply.nearestBelow = below
            reply.nearestAbove = above
        }
        return reply.json
    }
}
