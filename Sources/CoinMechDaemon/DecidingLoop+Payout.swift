import CoinMechCore
import CoinMechModel
import CoinMechProtocol
import CoinMechPublisher
import CoinMechSources
import Logging

/// A payout the deciding loop is running, one at a time.
struct PayoutJob {
    enum Stage {
        /// The changer is asked to hold still; waiting for it to be.
        case holding(since: Instant)
        /// Held still; waiting for a tube count newer than `after`.
        case counting(after: UInt64, since: Instant)
        /// A step is journalled and its DISPENSE asked for; waiting for its count.
        case dispensing(PayoutRun, since: Instant)
        /// Every step counted: the settlement waits for the ledger.
        case settling(PayoutRun, PayoutSettlement, since: Instant)
        /// The first journal write failed, and whether it committed all the same is not known
        /// yet: the changer stays held until the ledger says (nothing was sent either way).
        case journalUnknown(PayoutRun)
    }

    var order: PayoutOrder
    /// Nil once the asker has an answer (the outcome, or "open" when a DISPENSE takes long).
    var completion: DecidingLoop.Completion?
    var stage: Stage
    /// Inventory moves counted and not yet on the ledger: they go with the next journal write
    /// (the next step or the settlement), so a crash before it leaves the hopper's own account
    /// of the last step to settle from.
    var inventory: [InventoryChange] = []
    /// Settled (or given up before anything was journalled): the job is over.
    var done = false

    mutating func answer(_ reply: Result<JSON, CommandError>) {
        completion?(reply)
        completion = nil
    }
}

/// Money out (docs/LEDGER.md, payouts). Every step is journalled before its coin moves, and
/// what was paid is read from the changer's own tube counts, never assumed:
/// 1. the changer is held still (COIN TYPE 0, its buttons off, a quiet POLL since) and its
///    tubes counted;
/// 2. the plan is made from that count; if it cannot pay exactly, nothing is journalled;
/// 3. `payout_requested` and the first `payout_dispensing` commit together, then the DISPENSE
///    goes out; each further step commits before its DISPENSE;
/// 4. once the changer stops paying, its tubes say what the step paid (`PayoutRun`);
/// 5. `payout_done`, `payout_partial` (with the debt) or `payout_failed` settles it, the hold
///    ends and the asker hears.
/// A daemon that finds a payout open at its start holds the changer from its setup on and
/// settles it from a count of the held changer: it never dispenses again on a guess.
extension DecidingLoop {
    /// The mech, if it gives change.
    var payingMech: (any PayingMech)? {
        guard let mech = acceptorMech as? any PayingMech, mech.givesChange else { return nil }
        return mech
    }

    /// How long the changer may take to hold still, and to count its tubes, before a payout is
    /// given up with nothing journalled.
    static let payoutHoldTimeout = Duration.seconds(10)
    /// How long an asker waits for a DISPENSE before it is answered `open` (the payout goes
    /// on, and a repeat of its request id answers its outcome once settled).
    static let payoutAnswerTimeout = Duration.seconds(30)
    /// How long a stopping daemon waits for the DISPENSE under way to be counted.
    static let payoutStopTimeout = Duration.seconds(15)
    /// A DISPENSE not counted by then (the changer gone, its replies unreadable) is left to
    /// the settlement of payouts left open: the changer stays held until a count settles it.
    static let payoutCountTimeout = Duration.seconds(120)

    func beginPayout(amountMinor: Int64, currency: String?, requestID: String, by: String, completion: @escaping Completion) {
        guard let mech = payingMech else {
            return completion(.failure(CommandError(.unavailable, "this mech gives no change: an MDB changer's tubes or ccTalk hoppers (source.hoppers) pay out")))
        }
        do throws(LedgerError) {
            if let record = try ledger.payout(requestID: requestID) {
                // Asked before: answered from the ledger, never paid again.
                let first = record.order
                if first.amountMinor != amountMinor || (currency != nil && currency != first.currency) {
                    return completion(.failure(CommandError(.badRequest, "request id \(requestID) was used for a payout of \(first.amountMinor) \(first.currency): a request id names one payout")))
                }
                return completion(.success(Self.payoutReply(record: record, coins: mech.payableCoins?.coins ?? [:], repeated: true)))
            }
        } catch {
            return completion(.failure(CommandError(.unavailable, "the ledger cannot be read, so the payout cannot be checked against earlier ones: nothing paid (\(error))")))
        }
        guard !isStopping else {
            return completion(.failure(CommandError(.unavailable, "the daemon is stopping: nothing paid; ask again with request id \(requestID) once it is back")))
        }
        guard payout == nil, unsettledPayouts.isEmpty else {
            return completion(.failure(CommandError(.unavailable, "another payout is under way or being settled: ask again when it is over")))
        }
        guard let payable = mech.payableCoins else {
            return completion(.failure(CommandError(.unavailable, "the changer is not set up yet: the values of its coins are not known")))
        }
        if let currency, currency != payable.currency {
            return completion(.failure(CommandError(.badRequest, "the changer pays \(payable.currency), not \(currency)")))
        }
        let order = PayoutOrder(requestID: requestID, amountMinor: amountMinor, currency: payable.currency, by: by)
        logger.notice("payout asked for", metadata: ["request_id": "\(requestID)", "amount_minor": "\(amountMinor)", "by": "\(by)"])
        mech.holdForPayout(true)
        payout = PayoutJob(order: order, completion: completion, stage: .holding(since: .now))
    }

    /// Moves the payout on as far as the changer allows; called every turn of the loop.
    /// `stopping`: no further step is sent; the one under way is counted and settled.
    func servicePayout(stopping: Bool = false) {
        guard let mech = payingMech else { return }
        if !unsettledPayouts.isEmpty { settleUnsettled(mech) }
        guard var job = payout else { return }
        defer { payout = job.done ? nil : job }
        for counted in mech.takeDispensed() {
            guard case .dispensing(var run, _) = job.stage, run.awaiting else {
                logger.warning("a DISPENSE was counted with no payout step waiting for it", metadata: ["type": "\(counted.type)"])
                continue
            }
            failpoints.hit(.payoutCounted)
            if let paid = counted.devicePaid, let step = run.steps.last, paid > 0 {
                job.inventory.append(InventoryChange(source: sourceName, unit: step.type, coinID: step.coinID, valueMinor: step.valueMinor,
                                                     kind: .paid(requestID: job.order.requestID, step: run.steps.count, paid: paid,
                                                                 unpaid: counted.deviceUnpaid ?? max(step.count - paid, 0))))
            }
            run.dispensed(counted)
            if stopping { run.stopHere("the daemon stopped mid-payout: no further step was sent") }
            advance(&job, run: run, tubes: counted.tubes, mech)
        }
        guard !job.done else { return }
        switch job.stage {
        case .holding(let since):
            if stopping {
                giveUp(&job, mech, "the daemon is stopping")
            } else if mech.isHeldStill {
                mech.countTubes()
                job.stage = .counting(after: mech.tubeCounts?.reads ?? 0, since: .now)
            } else if .now - since > Self.payoutHoldTimeout {
                giveUp(&job, mech, "the changer did not hold still (COIN TYPE 0 acknowledged, then quiet) within \(Self.payoutHoldTimeout)")
            }
        case .counting(let after, let since):
            if stopping { return giveUp(&job, mech, "the daemon is stopping") }
            // A tube moved since (a coin that was on its way): held still again, counted again.
            guard mech.isHeldStill else { return job.stage = .holding(since: since) }
            guard let tubes = mech.tubeCounts, tubes.reads > after, let payable = mech.payableCoins else {
                if .now - since > Self.payoutHoldTimeout { giveUp(&job, mech, "the changer did not count its tubes within \(Self.payoutHoldTimeout)") }
                return
            }
            start(&job, tubes: tubes.counts, coins: payable.coins, mech)
        case .dispensing(_, let since):
            answerOpenAfterTimeout(&job, since: since)
            if .now - since > Self.payoutCountTimeout, let record = try? ledger.payout(requestID: job.order.requestID) {
                // Never counted: left open, for a count of the held changer to settle.
                logger.critical("a DISPENSE was not counted within \(Self.payoutCountTimeout): the payout stays open and the changer held until its tubes can be counted",
                                metadata: ["request_id": "\(job.order.requestID)"])
                unsettledPayouts.append(record)
                unsettledCountAfter = nil
                job.answer(.success(Self.payoutReply(record: record, coins: [:], repeated: false)))
                job.done = true
            }
        case .settling(let run, let settlement, let since):
            answerOpenAfterTimeout(&job, since: since)
            settle(&job, run: run, settlement, mech)
        case .journalUnknown(var run):
            do throws(LedgerError) {
                if try ledger.payout(requestID: job.order.requestID) != nil {
                    run.notSent("the ledger reported an error for the journal it had written")
                    settle(&job, run: run, run.settlement(), mech)
                } else {
                    release(&job, mech, .failure(CommandError(.unavailable, "the ledger could not journal the payout: nothing paid")))
                }
            } catch {
                answerOpenAfterTimeout(&job, since: .now)
            }
        }
    }

    /// An asker waiting longer than `payoutAnswerTimeout` hears `open`: the payout goes on, and a
    /// repeat of its request id answers its outcome once settled.
    private func answerOpenAfterTimeout(_ job: inout PayoutJob, since: Instant) {
        guard job.completion != nil, .now - since > Self.payoutAnswerTimeout else { return }
        job.answer(.success(Self.payoutReply(record: PayoutRecord(order: job.order, source: sourceName, requestedSeq: 0, settledSeq: nil, steps: [],
                                                                  settlement: nil), coins: [:], repeated: false)))
    }

    /// The first count: the plan, and the first step journalled with the request, or the
    /// refusal with nothing journalled.
    private func start(_ job: inout PayoutJob, tubes: [Int], coins: [Int: PayoutCoin], _ mech: any PayingMech) {
        var run = PayoutRun(order: job.order, coins: coins)
        switch run.plan(tubes: tubes) {
        case .cannotPayExact(let below, let above):
            let result: [String: JSON] = [
                "request_id": .string(job.order.requestID), "state": "refused", "reason": "cannot_pay_exact", "amount_minor": .int(job.order.amountMinor),
                "currency": .string(job.order.currency), "paid_minor": .int(0), "nearest_below": .int(below), "nearest_above": above.map(JSON.int) ?? .null,
                "repeated": false,
            ]
            release(&job, mech, .success(.object(result)))
        case .exact(let plan):
            guard var step = run.nextStep(tubes: tubes) else { return }
            step.deviceMark = mech.deviceMark(type: step.type)
            let entries: [LedgerEntry] = [.payoutRequested(job.order, source: sourceName, plan: plan, device: mech.deviceIdentity),
                                          .payoutDispensing(requestID: job.order.requestID, step: run.steps.count, step)]
            do throws(LedgerError) {
                hub.publish(try ledger.append(entries).events)
            } catch {
                logger.error("payout not journalled: nothing paid", metadata: ["request_id": "\(job.order.requestID)", "error": "\(error)"])
                // A commit that landed though the call failed must not stay open: nothing was
                // sent, and the changer stays held until the ledger says which it was.
                job.stage = .journalUnknown(run)
                return
            }
            send(step, &job, run: run, tubes: tubes, mech)
        }
    }

    /// After a step's count: the next step journalled and sent, or the settlement.
    private func advance(_ job: inout PayoutJob, run: PayoutRun, tubes: [Int], _ mech: any PayingMech) {
        var run = run
        guard var step = run.nextStep(tubes: tubes) else {
            return settle(&job, run: run, run.settlement(), mech)
        }
        step.deviceMark = mech.deviceMark(type: step.type)
        do throws(LedgerError) {
            hub.publish(try journal([.payoutDispensing(requestID: job.order.requestID, step: run.steps.count, step)], after: &job.inventory, mech).events)
        } catch {
            // Not sent: the step pays nothing, and the payout ends with the rest owed (a step
            // that was journalled after all is settled as not paid: its tube did not move).
            logger.error("payout step not journalled: the payout ends here", metadata: ["request_id": "\(job.order.requestID)", "error": "\(error)"])
            run.notSent("the ledger could not journal it: \(error)")
            return settle(&job, run: run, run.settlement(), mech)
        }
        send(step, &job, run: run, tubes: tubes, mech)
    }

    /// A journalled step's DISPENSE. One the changer cannot take now is not sent: it paid
    /// nothing, and the payout ends with the rest owed.
    private func send(_ step: PayoutStep, _ job: inout PayoutJob, run: PayoutRun, tubes: [Int], _ mech: any PayingMech) {
        failpoints.hit(.payoutJournalled)
        var run = run
        guard mech.dispense(type: step.type, count: step.count) else {
            logger.warning("the changer could not take the DISPENSE: not sent", metadata: ["type": "\(step.type)", "count": "\(step.count)"])
            run.notSent("the changer could not take the DISPENSE")
            return settle(&job, run: run, run.settlement(), mech)
        }
        job.stage = .dispensing(run, since: .now)
        logger.info("DISPENSE asked for", metadata: ["request_id": "\(job.order.requestID)", "type": "\(step.type)", "count": "\(step.count)", "tube_before": "\(step.tubeBefore)"])
    }

    /// The settlement journalled, the hold ended, the asker answered. A ledger that cannot
    /// write keeps the changer held and the settlement waiting: it is tried every turn. One
    /// that says the payout is settled already is believed, and answered from.
    private func settle(_ job: inout PayoutJob, run: PayoutRun, _ settlement: PayoutSettlement, _ mech: any PayingMech) {
        if case .settling = job.stage {} else { job.stage = .settling(run, settlement, since: .now) }
        let result: AppendResult
        do throws(LedgerError) {
            result = try journal([.payoutSettled(requestID: job.order.requestID, settlement)], after: &job.inventory, mech)
        } catch .precondition(let message) {
            logger.error("payout settled already: answered from the ledger", metadata: ["request_id": "\(job.order.requestID)", "why": "\(message)"])
            let record = try? ledger.payout(requestID: job.order.requestID)
            return release(&job, mech, record.map { .success(Self.payoutReply(record: $0, coins: run.coins, repeated: false)) }
                ?? .failure(CommandError(.unavailable, message)))
        } catch {
            logger.error("payout settlement not journalled yet: the changer stays held until it is", metadata: ["request_id": "\(job.order.requestID)", "error": "\(error)"])
            return
        }
        hub.publish(result.events)
        log(settlement, order: job.order)
        let record = PayoutRecord(order: job.order, source: sourceName, requestedSeq: 0, settledSeq: result.events.first?.seq, steps: run.steps, settlement: settlement)
        release(&job, mech, .success(Self.payoutReply(record: record, coins: run.coins, repeated: false)))
    }

    /// Appends `entries` after the inventory moves counted so far, in one transaction; once it
    /// commits, the mech's levels follow the moves and they are gone from `inventory`.
    ///
    /// An earlier append that reported a failure may have landed: its moves are then on the
    /// ledger (a step is counted once, so this one is refused for them). Those are the mech's
    /// now, and the rest go again, so the payout settles in this run rather than being taken
    /// for settled already.
    private func journal(_ entries: [LedgerEntry], after inventory: inout [InventoryChange], _ mech: any PayingMech) throws(LedgerError) -> AppendResult {
        let result: AppendResult
        do throws(LedgerError) {
            result = try ledger.append(inventory.map(LedgerEntry.inventory) + entries)
        } catch .precondition(let message) {
            let landed = inventory.isEmpty ? [] : try ledger.counted(inventory)
            guard !landed.isEmpty else { throw .precondition(message) }
            logger.warning("payout moves the ledger refused are on it already (a commit reported failed had landed): the rest are journalled again",
                           metadata: ["moves": "\(landed.count)"])
            mech.recorded(landed)
            inventory.removeAll { landed.contains($0) }
            return try journal(entries, after: &inventory, mech)
        }
        if !inventory.isEmpty, failpoints.fails(.payoutMovesCommitted) {
            throw .write(message: "failpoint payout-moves-committed: the commit landed, and is reported failed")
        }
        mech.recorded(inventory)
        inventory = []
        return result
    }

    /// Given up before anything was journalled: nothing paid.
    private func giveUp(_ job: inout PayoutJob, _ mech: any PayingMech, _ why: String) {
        logger.warning("payout given up, nothing paid: \(why)", metadata: ["request_id": "\(job.order.requestID)"])
        release(&job, mech, .failure(CommandError(.unavailable, "\(why): nothing paid; ask again with request id \(job.order.requestID)")))
    }

    private func release(_ job: inout PayoutJob, _ mech: any PayingMech, _ reply: Result<JSON, CommandError>) {
        mech.holdForPayout(false)
        job.answer(reply)
        job.done = true
    }

    /// The daemon is stopping: a DISPENSE under way is counted and the payout settled here
    /// (no further step is sent), waiting at most `payoutStopTimeout`; one that is not counted
    /// by then stays open on the ledger for the next start to settle from the tubes.
    func finishPayoutBeforeStop(turn: () -> Void) {
        guard payout != nil else { return }
        let deadline = Instant.now + Self.payoutStopTimeout
        while payout != nil, Instant.now < deadline {
            turn()
            servicePayout(stopping: true)
        }
        guard var job = payout else { return }
        payout = nil
        logger.warning("stopping mid-payout: the next start settles it from the device's own count", metadata: ["request_id": "\(job.order.requestID)"])
        job.answer(.failure(CommandError(.unavailable, "the daemon stopped mid-payout: the next start settles it from the changer's own count; ask again with request id \(job.order.requestID) for the outcome")))
    }

    /// The payouts found open at the start, settled from a tube count of the changer held
    /// still, before any coin moves.
    private func settleUnsettled(_ mech: any PayingMech) {
        guard mech.isHeldStill, let tubes = mech.tubeCounts else { return }
        // Settled only on a count taken once the changer held still: not one its setup read.
        guard let after = unsettledCountAfter else {
            // A count of the held, quiet changer: the one its setup read came before the quiet.
            unsettledCountAfter = tubes.reads
            return mech.countTubes()
        }
        guard tubes.reads > after else { return }
        while let record = unsettledPayouts.first {
            let settlement: PayoutSettlement
            var inventory: [InventoryChange] = []
            switch mech.restartAccount(record) {
            case .wait:
                return
            case .counts(let counts, let reported, let moves, let caveat):
                var settled = PayoutRun.settle(record, tubes: counts, reported: reported)
                if let caveat, settled.debtMinor > 0 { settled.reason = caveat + (settled.reason.map { "; " + $0 } ?? "") }
                settlement = settled
                // Recorded only where the settlement believes the device (the same one).
                if settlement.paidMinor > 0 { inventory = moves.map { var move = $0; move.source = sourceName; return move } }
            case .unverifiable(let why):
                settlement = PayoutRun.unverified(record, why)
            }
            do throws(LedgerError) {
                hub.publish(try journal([.payoutSettled(requestID: record.order.requestID, settlement)], after: &inventory, mech).events)
            } catch .precondition(let message) {
                logger.error("the payout left open is settled already", metadata: ["request_id": "\(record.order.requestID)", "why": "\(message)"])
            } catch {
                return logger.error("could not settle the payout left open: the changer stays held until the ledger can", metadata: ["request_id": "\(record.order.requestID)", "error": "\(error)"])
            }
            unsettledPayouts.removeFirst()
            log(settlement, order: record.order)
        }
        if payout == nil { mech.holdForPayout(false) }
    }

    private func log(_ settlement: PayoutSettlement, order: PayoutOrder) {
        let metadata: Logger.Metadata = ["request_id": "\(order.requestID)", "paid_minor": "\(settlement.paidMinor)", "debt_minor": "\(settlement.debtMinor)",
                                         "after_restart": "\(settlement.afterRestart)"]
        switch settlement.outcome {
        case .done: logger.notice("payout done", metadata: metadata)
        case .partial, .failed:
            logger.critical("payout \(settlement.outcome.rawValue): the customer is owed \(settlement.debtMinor) \(order.currency)\(settlement.reason.map { ": \($0)" } ?? "")", metadata: metadata)
        }
    }

    /// The answer to `payout`, from a record (a repeat) or a settlement just journalled;
    /// `state` `open` for one not settled yet.
    static func payoutReply(record: PayoutRecord, coins: [Int: PayoutCoin], repeated: Bool) -> JSON {
        let order = record.order
        var result: [String: JSON] = ["request_id": .string(order.requestID), "amount_minor": .int(order.amountMinor), "currency": .string(order.currency),
                                      "repeated": .bool(repeated)]
        guard let settlement = record.settlement else {
            result["state"] = "open"
            return .object(result)
        }
        result["state"] = .string(settlement.outcome.rawValue)
        result["paid_minor"] = .int(settlement.paidMinor)
        result["debt_minor"] = .int(settlement.debtMinor)
        result["after_restart"] = .bool(settlement.afterRestart)
        if let reason = settlement.reason { result["reason"] = .string(reason) }
        if let seq = record.settledSeq { result["seq"] = .int(seq) }
        result["coins"] = .array(settlement.paidCoins.sorted { $0.key < $1.key }.map { type, count in
            ["type": .int(Int64(type)), "coin_id": coins[type]?.coinID.map(JSON.string) ?? .null, "value_minor": .int(coins[type]?.valueMinor ?? 0),
             "count": .int(Int64(count))]
        })
        return .object(result)
    }
}

/// Inventory: an operator's refill or count of a hopper, audited on the ledger (who, how many,
/// the level before and after). A hopper cannot count its own coins, so these, and what each
/// payout step paid by the hopper's own account, are all that move its level.
extension DecidingLoop {
    func changeInventory(unit name: String, _ kind: InventoryChange.Kind, completion: @escaping Completion) {
        guard let mech = payingMech, let payable = mech.payableCoins, let levels = (mech as? CCTalkMech)?.levels else {
            return completion(.failure(CommandError(.unavailable, "this mech has no payout units whose level the ledger keeps: refill and float are for ccTalk hoppers (an MDB changer counts its own tubes)")))
        }
        let matches = payable.coins.filter { "\($0.key)" == name || $0.value.coinID == name }.keys.sorted()
        guard let unit = matches.first, matches.count == 1 else {
            let known = payable.coins.sorted { $0.key < $1.key }.map { "\($0.key) (\($0.value.coinID ?? "?"))" }.joined(separator: ", ")
            return completion(.failure(CommandError(.badRequest, matches.isEmpty ? "no payout unit \(name): the units are \(known)"
                                                    : "\(name) names more than one unit (\(known)): give the unit number")))
        }
        guard payout == nil, unsettledPayouts.isEmpty else {
            return completion(.failure(CommandError(.unavailable, "a payout is under way or being settled: refill or count the hopper once it is over")))
        }
        let coin = payable.coins[unit]!
        let change = InventoryChange(source: sourceName, unit: unit, coinID: coin.coinID, valueMinor: coin.valueMinor, kind: kind)
        let before = levels.indices.contains(unit) ? levels[unit] : 0
        if let requestID = kind.operatorRequestID {
            // Its own failure is not the append's: the recovery below is for an append only.
            do throws(LedgerError) {
                if let done = try ledger.operatorInventoryChange(requestID: requestID) { return completion(Self.repeated(done, asked: change)) }
            } catch {
                return completion(.failure(CommandError(.unavailable, "the ledger could not be read, so nothing is recorded; ask again with the same request id: \(error)")))
            }
        }
        do throws(LedgerError) {
            let result = try ledger.append([.inventory(change)])
            if failpoints.fails(.inventoryCommitted) { throw .write(message: "failpoint inventory-committed: the commit landed, and is reported failed") }
            hub.publish(result.events)
            mech.recorded([change])
            logger.notice("hopper inventory changed", metadata: ["unit": "\(unit)", "coin_id": "\(coin.coinID ?? "?")", "level_before": "\(before)",
                                                                 "level": "\(change.level(after: before))", "change": "\(kind)"])
            completion(.success(Self.inventoryReply(unit: unit, coinID: coin.coinID, levelBefore: before, level: change.level(after: before),
                                                    seq: result.events.first?.seq, requestID: kind.operatorRequestID, repeated: false)))
        } catch {
            // A commit that landed though it reported a failure: under a request id the ledger
            // says so, and the mech's level must follow it, or a retry answered from the ledger
            // would leave the plan counting the old level.
            if let requestID = kind.operatorRequestID, let done = try? ledger.operatorInventoryChange(requestID: requestID), case .success(let reply) = Self.repeated(done, asked: change, repeated: false) {
                mech.recorded([change])
                logger.warning("a hopper inventory change the ledger reported failed had landed: the level follows it", metadata: ["request_id": "\(requestID)", "seq": "\(done.seq)"])
                return completion(.success(reply))
            }
            completion(.failure(CommandError(.unavailable, "the ledger could not record it, so the level is unchanged (ask again with the same request id): \(error)")))
        }
    }

    /// A request id already on the ledger: answered with what was recorded then (the levels of
    /// that moment), if it asks the same; otherwise refused, since one id is one action.
    /// `repeated` is false for the ask whose own commit it is.
    static func repeated(_ done: OperatorInventoryRecord, asked change: InventoryChange, repeated: Bool = true) -> Result<JSON, CommandError> {
        let (refill, coins): (Bool, Int) = switch change.kind {
        case .refilled(let added, _, _): (true, added)
        case .set(let level, _, _): (false, level)
        case .paid: (false, -1)
        }
        guard done.refill == refill, done.unit == change.unit, done.source == change.source, done.coins == coins else {
            let was = "\(done.refill ? "a refill of \(done.coins) coin(s)" : "a float of \(done.coins) coin(s)") into unit \(done.unit) (seq \(done.seq))"
            return .failure(CommandError(.badRequest, "request id \(done.requestID) was \(was): a retry asks the same, a new action takes a new id"))
        }
        return .success(inventoryReply(unit: done.unit, coinID: done.coinID, levelBefore: done.levelBefore, level: done.level, seq: done.seq,
                                       requestID: done.requestID, repeated: repeated))
    }

    /// The answer to `refill` and `float`: the unit's level before and after, the event that
    /// recorded it, and, under a request id, whether it was recorded by an earlier ask.
    static func inventoryReply(unit: Int, coinID: String?, levelBefore: Int, level: Int, seq: Int64?, requestID: String?, repeated: Bool) -> JSON {
        var reply: [String: JSON] = ["unit": .int(Int64(unit)), "coin_id": coinID.map(JSON.string) ?? .null, "level_before": .int(Int64(levelBefore)),
                                     "level": .int(Int64(level)), "seq": seq.map(JSON.int) ?? .null]
        if let requestID {
            reply["request_id"] = .string(requestID)
            reply["repeated"] = .bool(repeated)
        }
        return .object(reply)
    }
}
