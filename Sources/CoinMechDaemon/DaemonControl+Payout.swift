import CoinMechCore
import CoinMechProtocol
import CoinMechPublisher

extension DaemonControl {
    /// `payout_plan`: how the changer would pay `amountMinor` from its tubes as it last counted
    /// them (`PayoutPlanner`), or the nearest amounts it can pay. Read from `status`'s snapshot;
    /// nothing moves and nothing is recorded.
    func payoutPlan(amountMinor: Int64, currency: String?) throws(CommandError) -> JSON {
        let status = loop.status.withLock { $0 }
        guard let changer = status.acceptor?.changer else {
            throw CommandError(.unavailable, "this mech gives no change: only an MDB changer has tubes to pay from (source.kind is \(configuration.source.kind))")
        }
        guard !changer.values.isEmpty else {
            throw CommandError(.unavailable, "the changer is not set up yet: the values of its coins are not known")
        }
        let pays = changer.currency ?? "?"
        if let currency, currency != changer.currency {
            throw CommandError(.badRequest, "the changer pays \(pays), not \(currency)")
        }
        let tubes = changer.values.map { PayoutPlanner.Coins(type: $0.key, valueMinor: $0.value, count: changer.tubes[$0.key]) }
        var result: [String: JSON] = ["amount_minor": .int(amountMinor), "currency": .string(pays)]
        switch PayoutPlanner.plan(amountMinor, from: tubes) {
        case .exact(let steps):
            result["payable"] = .bool(true)
            result["coins"] = .array(steps.map { step in
                ["coin_id": .string(changer.coins[step.type] ?? "?"), "value_minor": .int(step.valueMinor), "count": .int(Int64(step.count))]
            })
        case .cannotPayExact(let below, let above):
            result["payable"] = .bool(false)
            result["reason"] = .string("cannot_pay_exact")
            result["nearest_below"] = .int(below)
            result["nearest_above"] = above.map(JSON.int) ?? .null
        }
        return .object(result)
    }
}
