import CoinMechCore
import CoinMechProtocol
import CoinMechPublisher

extension DaemonControl {
    /// `payout_plan`: how the changer would pay `amountMinor` from its tubes as it last counted
    /// them (`PayoutPlanner`), or the nearest amounts it can pay. Read from `status`'s snapshot;
    /// nothing moves and nothing is recorded.
    func payoutPlan(amountMinor: Int64, currency: String?) throws(CommandError) -> JSON {
        let status = loop.status.withLock { $0 }
        let names: [Int: String]
        let tubes: [PayoutPlanner.Coins]
        let pays: String
        if let changer = status.acceptor?.changer {
            guard !changer.values.isEmpty else {
                throw CommandError(.unavailable, "the changer is not set up yet: the values of its coins are not known")
            }
            names = changer.coins
            pays = changer.currency ?? "?"
            tubes = changer.values.map { PayoutPlanner.Coins(type: $0.key, valueMinor: $0.value, count: changer.tubes[$0.key]) }
        } else if let hoppers = status.acceptor?.hoppers {
            // A hopper's level is the ledger's; one below 0, or one that cannot pay now, is empty.
            names = Dictionary(uniqueKeysWithValues: hoppers.map { ($0.unit, $0.device.unit.coinID) })
            pays = status.acceptor?.hopperCurrency ?? "?"
            tubes = hoppers.map { PayoutPlanner.Coins(type: $0.unit, valueMinor: $0.device.unit.valueMinor, count: $0.canPay ? max($0.level, 0) : 0) }
        } else {
            throw CommandError(.unavailable, "this mech gives no change: an MDB changer's tubes or ccTalk hoppers (source.hoppers) pay out (source.kind is \(configuration.source.kind))")
        }
        if let currency, currency != pays {
            throw CommandError(.badRequest, "the change is paid in \(pays), not \(currency)")
        }
        var result: [String: JSON] = ["amount_minor": .int(amountMinor), "currency": .string(pays)]
        switch PayoutPlanner.plan(amountMinor, from: tubes) {
        case .exact(let steps):
            result["payable"] = .bool(true)
            result["coins"] = .array(steps.map { step in
                ["coin_id": .string(names[step.type] ?? "?"), "value_minor": .int(step.valueMinor), "count": .int(Int64(step.count))]
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
