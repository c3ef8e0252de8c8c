import CoinMechCore
import CoinMechModel
import CoinMechProtocol
import CoinMechPublisher

/// The socket API's replies to the operators' commands (CoinMechProtocol's `OperatorReply`
/// types), from the outcomes the cores reply with.
enum OperatorReplies {
    /// The deciding core's outcome of an operator's command.
    static func reply(_ outcome: CommandOutcome) -> Result<JSON, CommandError> {
        switch outcome {
        case .inhibited(let on, let seq):
            return .success(InhibitReply(inhibited: on, seq: seq).json)
        case .collected(let seq, let credited, let unconfirmed):
            return .success(CollectReply(seq: seq, collected: credited, unconfirmed: unconfirmed).json)
        case .reloaded(let record, let seq):
            return .success(ReloadReply(generation: Int64(record.generation), fingerprint: record.fingerprint,
                                        links: record.links.split(separator: ",").map { String($0.prefix { $0 != "#" }) }, seq: seq).json)
        case .unrecorded(let message):
            return .failure(CommandError(.unavailable, message))
        case .reloadFailed(let reason, let generation):
            return .failure(CommandError(.failed, "reload failed, chain generation \(generation) keeps deciding: \(reason)"))
        case .teaching(let session, let seq):
            let request = session.request
            return .success(TeachStartReply(seq: seq, currency: request.currency, code: request.code, coins: Int64(request.coins), link: request.link,
                                            file: request.file).json)
        case .taught(let record, let seq):
            return .success(TeachCommitReply(seq: seq, currency: record.currency, code: record.code, samples: Int64(record.samples),
                                             leftOut: Int64(record.leftOut), file: record.file, sha256: record.sha256, axes: record.axes).json)
        case .teachAborted(let session, let seq):
            return .success(TeachAbortReply(seq: seq, currency: session.request.currency, code: session.request.code,
                                            samples: Int64(session.samples.count)).json)
        case .teachRefused(let message), .teachFailed(let message):
            return .failure(CommandError(.failed, message))
        }
    }

    /// The payout core's answer to `payout`, `refill` or `float`.
    static func reply(_ answer: PayoutAnswer) -> Result<JSON, CommandError> {
        switch answer {
        case .payout(let record, let coins, let repeated):
            return .success(payoutReply(record: record, coins: coins, repeated: repeated).json)
        case .refused(let order, let below, let above):
            var reply = PayoutReply(requestID: order.requestID, state: .refused, amountMinor: order.amountMinor, currency: order.currency, repeated: false)
            reply.reason = "cannot_pay_exact"
            reply.paidMinor = 0
            reply.nearestBelow = below
            reply.nearestAbove = above
            return .success(reply.json)
        case .inventory(let done, let repeated):
            return .success(InventoryReply(unit: Int64(done.unit), coinID: done.coinID, levelBefore: Int64(done.levelBefore), level: Int64(done.level),
                                           seq: done.seq, requestID: done.requestID, repeated: repeated).json)
        case .unavailable(let message):
            return .failure(CommandError(.unavailable, message))
        case .badRequest(let message):
            return .failure(CommandError(.badRequest, message))
        }
    }

    /// A payout as the ledger holds it (a repeat) or as just settled; `open` while not settled.
    static func payoutReply(record: PayoutRecord, coins: [Int: PayoutCoin], repeated: Bool) -> PayoutReply {
        let order = record.order
        guard let settlement = record.settlement else {
            return PayoutReply(requestID: order.requestID, state: .open, amountMinor: order.amountMinor, currency: order.currency, repeated: repeated)
        }
        let state: PayoutReply.State = switch settlement.outcome {
        case .done: .done
        case .partial: .partial
        case .failed: .failed
        }
        var reply = PayoutReply(requestID: order.requestID, state: state, amountMinor: order.amountMinor, currency: order.currency, repeated: repeated)
        reply.paidMinor = settlement.paidMinor
        reply.debtMinor = settlement.debtMinor
        reply.afterRestart = settlement.afterRestart
        reply.reason = settlement.reason
        reply.seq = record.settledSeq
        reply.coins = settlement.paidCoins.sorted { $0.key < $1.key }.map { type, count in
            PaidCoins(type: Int64(type), coinID: coins[type]?.coinID, valueMinor: coins[type]?.valueMinor ?? 0, count: Int64(count))
        }
        return reply
    }

    /// The credit core's answer to `spend`, `refund` or `cancel`.
    static func reply(_ answer: CreditAnswer, to command: CreditCommand) -> Result<JSON, CommandError> {
        let id = command.requestID
        switch answer {
        case .spent(let record, let repeated), .refunded(let record, let repeated):
            var reply = CreditReply(requestID: id, state: record.move.kind == .refunded ? .refunded : .approved, currency: record.move.currency,
                                    balanceMinor: record.balanceAfterMinor)
            reply.amountMinor = record.move.amountMinor
            reply.item = record.move.item
            reply.seq = record.seq
            reply.repeated = repeated
            return .success(reply.json)
        case .spentAndRefunded(let sale, let refund):
            var reply = CreditReply(requestID: id, state: .approved, currency: sale.move.currency, balanceMinor: sale.balanceAfterMinor)
            reply.amountMinor = sale.move.amountMinor
            reply.item = sale.move.item
            reply.seq = sale.seq
            reply.repeated = true
            reply.refundedSeq = refund.seq
            return .success(reply.json)
        case .short(let balance, let currency):
            var reply = CreditReply(requestID: id, state: .refused, currency: currency, balanceMinor: balance)
            reply.reason = "credit_short"
            if case .spend(_, let amount, _, let item, _) = command {
                reply.amountMinor = amount
                reply.item = item
            }
            return .success(reply.json)
        case .returned(let payout, let kept):
            guard case .payout(let record, let coins, let repeated) = payout else { return reply(payout) }
            var reply = CreditReply(requestID: id, state: .returned, currency: record.order.currency, balanceMinor: kept)
            reply.keptMinor = kept
            reply.payout = payoutReply(record: record, coins: coins, repeated: repeated)
            reply.repeated = repeated
            return .success(reply.json)
        case .kept(let balance, let currency, let reason):
            var reply = CreditReply(requestID: id, state: .kept, currency: currency, balanceMinor: balance)
            reply.reason = reason
            return .success(reply.json)
        case .unavailable(let message):
            return .failure(CommandError(.unavailable, message))
        case .badRequest(let field, let message):
            return .failure(CommandError(.badRequest, "\"\(field)\": \(message)"))
        }
    }
}
