import CoinMechModel

/// Money out as a pure state machine (docs/LEDGER.md, "Payouts"), as `DecidingCore` is money
/// in: what to hold, count, journal, dispense, settle, publish and answer, with no I/O and no
/// clock. Its shell (the daemon's executor, or a test rig) carries out the outputs in order and
/// steps every outcome back in before anything else.
///
/// The rules it keeps:
/// - a payout is journalled before any coin moves: the request and its first step commit
///   together, each further step commits before its DISPENSE, and nothing is sent for a step
///   the ledger does not hold;
/// - a request id is one payout: a repeat is answered from the ledger, never paid again;
/// - what a step paid is the device's own count (a changer's tube fall, a hopper's account of
///   its last payout), never assumed (`PayoutRun`); what no plan can pay is owed, on the record;
/// - a commit that reports a failure is not taken for "not written": the ledger is read back
///   (`.lookUp`) and what it holds decides. A step it holds goes out, one it lacks is not sent;
///   a settlement it holds ends the payout, one it lacks is written again;
/// - a unit whose level the ledger keeps (a hopper) moves only by what the ledger records: what
///   a step paid rides with the next journal write, so that after a crash the hopper's own
///   account of its last step is the one record to settle from;
/// - a payout left open (its daemon died) is settled from the held device's own account before
///   any coin moves, and nothing is dispensed again on a guess.
public struct PayoutCore: Sendable {
    public struct Settings: Sendable {
        public var source: String
        public var capabilities: PayoutCapabilities
        /// How long the device may take to hold still, and to count its units, before a payout
        /// is given up with nothing journalled.
        public var holdTimeout: Duration = .seconds(10)
        /// How long an asker waits before it is answered `open` (the payout goes on, and a
        /// repeat of its request id answers its outcome once settled).
        public var answerTimeout: Duration = .seconds(30)
        /// A DISPENSE not counted by then (the device gone) leaves the payout open, for a count
        /// of the held device to settle.
        public var countTimeout: Duration = .seconds(120)
        /// How long a stopping daemon waits for the DISPENSE under way to be counted.
        public var stopTimeout: Duration = .seconds(15)
        /// How long after a ledger failure a write or a read is tried again.
        public var ledgerRetry: Duration = .seconds(1)

        public init(source: String, capabilities: PayoutCapabilities) {
            self.source = source
            self.capabilities = capabilities
        }
    }

    /// What `status` and a dry run (`payout_plan`) see.
    public struct Snapshot: Sendable, Equatable {
        public var coins: PayoutCoins?
        /// Per unit, what a plan counts it at now: the device's count, or the ledger's level
        /// (as empty when below 0 or when the unit cannot pay now).
        public var plannable: [Int: Int] = [:]
        /// The ledger's level of each unit, where it keeps them.
        public var levels: [Int]?
        /// Held for the payout under way, or for one left open.
        public var held = false
        /// The request id of the payout under way.
        public var paying: String?
        /// Payouts left open by an earlier daemon, not settled yet.
        public var open = 0

        public init() {}

        /// How the device would pay `amountMinor` now (`PayoutPlanner`): a dry run.
        public func plan(_ amountMinor: Int64) -> PayoutPlanner.Plan {
            PayoutPlanner.plan(amountMinor, from: (coins?.coins ?? [:]).map { unit, coin in
                PayoutPlanner.Coins(type: unit, valueMinor: coin.valueMinor, count: plannable[unit] ?? 0)
            })
        }
    }

    public let settings: Settings
    /// What the device said last.
    public private(set) var device = PayingDeviceState()
    /// The ledger's level of each unit where it keeps them (a hopper cannot count its coins);
    /// nil for a device that counts its own, and until the device's coins are known.
    public private(set) var levels: [Int]?
    private let restoredLevels: [Int: InventoryLevel]
    private var job: Job?
    /// Payouts a daemon before this one began and did not settle, oldest first.
    private var unsettled: [PayoutRecord]
    /// The count after which they may be settled: one the held device took once still.
    private var unsettledCountAfter: UInt64?
    private var unsettledRetryAt: Instant?
    /// An operator's refill or float whose commit reported a failure and whose record could
    /// not be read back: nothing else moves until the ledger says whether it landed.
    private var uncertain: (change: InventoryChange, retryAt: Instant)?
    /// DISPENSEs counted and not yet taken in, oldest first.
    private var counted: [DispenseCount] = []
    private var awaiting: Awaiting?
    private var stopDeadline: Instant?
    private let logger: CoreLogger

    private struct Job: Sendable {
        var order: PayoutOrder
        /// Nil once the asker has an answer (the outcome, or `open` past the answer timeout).
        var ticket: Ticket?
        var askedAt: Instant
        var stage: Stage
        var run: PayoutRun?
        /// Inventory moves counted and not yet on the ledger: they ride with the next journal
        /// write (the next step or the settlement).
        var moves: [InventoryChange] = []
        /// Who the device was when the payout was journalled.
        var device: String?
    }

    private enum Stage: Sendable {
        /// Asked to hold still; waiting for it to be.
        case holding(since: Instant)
        /// Held still; waiting for a count newer than `after`.
        case counting(after: UInt64, since: Instant)
        /// A step is journalled and its DISPENSE sent; waiting for its count.
        case dispensing(since: Instant)
        /// The count after a DISPENSE disagreed with it (short): counted again (newer than
        /// `after`) before it is believed.
        case recounting(DispenseCount, after: UInt64, since: Instant)
        /// The settlement is to be journalled (again at `retryAt`, after a failure).
        case settling(PayoutSettlement, retryAt: Instant)
        /// A journal write reported a failure and the ledger could not be read back yet.
        case unknown(Commit, LedgerError, retryAt: Instant)
    }

    /// What a commit records.
    private enum Commit: Sendable {
        /// The request with its first step.
        case start(PayoutStep)
        case step(PayoutStep)
        case settle(PayoutSettlement)
        /// The settlement of a payout left open.
        case settleOpen(PayoutRecord, PayoutSettlement)
        /// An operator's refill or float (`ticket` nil once the asker has an answer).
        case inventory(InventoryChange, Ticket?)
    }

    private enum Awaiting: Sendable {
        case request(PayoutRequest, Ticket)
        case inventoryRequest(InventoryChange, Ticket)
        case commit(Commit, moves: [InventoryChange])
        case readBack(Commit, moves: [InventoryChange], LedgerError)
        case dispense(PayoutStep)
        case account(PayoutRecord)
    }

    /// `open`: the payouts the ledger holds open for this source; `levels`: its inventory rows.
    public init(settings: Settings, open: [PayoutRecord], levels: [Int: InventoryLevel], logger: CoreLogger) {
        self.settings = settings
        unsettled = open
        restoredLevels = levels
        self.logger = logger
    }

    /// What to do before the device is set up: a device with payouts left open is held from its
    /// first command on, so that its count says only what those payouts paid.
    public func start() -> [PayoutOutput] { unsettled.isEmpty ? [] : [.hold(true)] }

    /// A payout is under way (a stopping daemon waits for it, at most `stopTimeout`).
    public var isPaying: Bool { job != nil }

    public var snapshot: Snapshot {
        var snapshot = Snapshot()
        snapshot.coins = device.coins
        snapshot.levels = levels
        let counts = plannableCounts()
        for unit in device.coins?.coins.keys ?? [:].keys { snapshot.plannable[unit] = counts.indices.contains(unit) ? counts[unit] : 0 }
        snapshot.held = job != nil || !unsettled.isEmpty
        snapshot.paying = job?.order.requestID
        snapshot.open = unsettled.count
        return snapshot
    }

    /// Takes one input at `now` and returns what to do, in order.
    public mutating func step(_ input: PayoutInput, at now: Instant) -> [PayoutOutput] {
        switch input {
        case .lookedUp(let result):
            switch awaiting.take() {
            case .request(let request, let ticket)?: return requested(request, ticket, result, now: now)
            case .inventoryRequest(let change, let ticket)?: return inventoryLookedUp(change, ticket, result)
            case .readBack(let commit, let moves, let error)?: return readBack(commit, moves: moves, error, result, now: now)
            default: preconditionFailure("a ledger read nobody asked for")
            }
        case .committed(let result):
            guard case .commit(let commit, let moves)? = awaiting.take() else { preconditionFailure("a commit outcome with no commit awaited") }
            return committed(commit, moves: moves, result, now: now)
        case .commitFailed(let error):
            guard case .commit(let commit, let moves)? = awaiting.take() else { preconditionFailure("a commit outcome with no commit awaited") }
            logger.error("a money-out commit reported a failure: the ledger is read back before anything moves", metadata: ["error": "\(error)"])
            awaiting = .readBack(commit, moves: moves, error)
            return [.lookUp(requestID: requestID(of: commit), moves: moves)]
        case .dispenseSent(let sent):
            guard case .dispense(let step)? = awaiting.take() else { preconditionFailure("a DISPENSE outcome with no DISPENSE awaited") }
            return dispenseSent(step, sent, now: now)
        case .account(let account):
            guard case .account(let record)? = awaiting.take() else { preconditionFailure("a device account nobody asked for") }
            return settleOpen(record, account, now: now)
        case .payout(let request, let ticket):
            precondition(awaiting == nil, "a new input while an outcome is awaited")
            awaiting = .request(request, ticket)
            return [.lookUp(requestID: request.requestID, moves: [])]
        case .inventory(let request, let ticket):
            precondition(awaiting == nil, "a new input while an outcome is awaited")
            return inventoryAsked(request, ticket)
        case .device(let state, let dispensed):
            precondition(awaiting == nil, "a new input while an outcome is awaited")
            device = state
            if levels == nil, settings.capabilities.contains(.ledgerKeepsLevels), let coins = state.coins, let last = coins.coins.keys.max() {
                // A level is the unit's only if the ledger's row is for the same coin: a list
                // reordered or a hopper swapped for another coin starts empty until counted.
                levels = (0...last).map { unit in restoredLevels[unit].flatMap { $0.coinID == coins.coins[unit]?.coinID ? $0.level : nil } ?? 0 }
            }
            counted += dispensed
            return advance(now)
        case .stop:
            precondition(awaiting == nil, "a new input while an outcome is awaited")
            if stopDeadline == nil { stopDeadline = now + settings.stopTimeout }
            return advance(now)
        }
    }

    private var stopping: Bool { stopDeadline != nil }

    /// The request id a commit is for, under which the ledger is read back.
    private func requestID(of commit: Commit) -> String {
        switch commit {
        case .start, .step, .settle: job?.order.requestID ?? ""
        case .settleOpen(let record, _): record.order.requestID
        case .inventory(let change, _): change.kind.operatorRequestID ?? ""
        }
    }

    // MARK: Moving on

    /// As far as the device and the ledger allow: at most until an outcome is awaited.
    private mutating func advance(_ now: Instant) -> [PayoutOutput] {
        guard awaiting == nil else { return [] }
        if let (change, retryAt) = uncertain {
            guard now >= retryAt else { return [] }
            awaiting = .readBack(.inventory(change, nil), moves: [], .write(message: "an earlier commit whose outcome was not known"))
            return [.lookUp(requestID: change.kind.operatorRequestID ?? "", moves: [])]
        }
        if let deadline = stopDeadline, now > deadline, let job {
            // Not counted in time: the next start settles it from the device's own count.
            self.job = nil
            logger.warning("stopping mid-payout: the next start settles it from the device's own count", metadata: ["request_id": job.order.requestID])
            guard let ticket = job.ticket else { return [] }
            return [.reply(ticket, .unavailable("the daemon stopped mid-payout: the next start settles it from the device's own count; ask again with request id \(job.order.requestID) for the outcome"))]
        }
        guard let current = job else {
            for count in counted { logger.warning("a DISPENSE was counted with no payout step waiting for it", metadata: ["type": "\(count.type)"]) }
            counted = []
            return unsettled.isEmpty ? [] : settleNextOpen(now)
        }
        if !counted.isEmpty { return takeCount(now) }
        var outputs = answerOpenPastTimeout(now)
        switch current.stage {
        case .holding(let since):
            if stopping { return outputs + giveUp("the daemon is stopping", now: now) }
            if device.heldStill {
                job?.stage = .counting(after: device.countReads, since: now)
                return outputs + [.count]
            }
            if now - since > settings.holdTimeout {
                return outputs + giveUp("the device did not hold still (taking no coin, paying none) within \(settings.holdTimeout)", now: now)
            }
        case .counting(let after, let since):
            if stopping { return outputs + giveUp("the daemon is stopping", now: now) }
            // A unit moved since (a coin that was on its way): held still again, counted again.
            guard device.heldStill else {
                job?.stage = .holding(since: since)
                return outputs
            }
            guard device.countReads > after, let coins = device.coins, countsKnown else {
                if now - since > settings.holdTimeout {
                    return outputs + giveUp("the device did not count its units within \(settings.holdTimeout)", now: now)
                }
                return outputs
            }
            return outputs + start(coins, now: now)
        case .recounting(let count, let after, let since):
            var recount = count
            if device.countReads > after, let units = device.units {
                recount.tubes = units
            } else if now - since <= settings.holdTimeout {
                break
            }
            // The second count, or the first when none came in time: the step's count.
            job?.stage = .dispensing(since: since)
            return outputs + taken(recount, recounted: true, now: now)
        case .dispensing(let since):
            guard now - since > settings.countTimeout else { break }
            // Never counted: left open, for a count of the held device to settle.
            logger.critical("a DISPENSE was not counted within \(settings.countTimeout): the payout stays open and the device held until it can be counted",
                            metadata: ["request_id": current.order.requestID])
            var record = PayoutRecord(order: current.order, source: settings.source, requestedSeq: 0, settledSeq: nil, steps: current.run?.steps ?? [],
                                      settlement: nil)
            record.device = current.device
            unsettled.append(record)
            unsettledCountAfter = nil
            let ticket = job?.ticket
            job = nil
            if let ticket { outputs.append(.reply(ticket, .payout(record, coins: [:], repeated: false))) }
        case .settling(let settlement, let retryAt):
            if now >= retryAt { return outputs + settle(settlement, now: now) }
        case .unknown(let commit, let error, let retryAt):
            if now >= retryAt {
                awaiting = .readBack(commit, moves: current.moves, error)
                return outputs + [.lookUp(requestID: current.order.requestID, moves: current.moves)]
            }
        }
        return outputs
    }

    /// Whether the device's counts are known: its own (a changer's tubes), or the ledger's
    /// levels (hoppers).
    private var countsKnown: Bool { levels != nil || device.units != nil }

    /// What a plan counts each unit at: the device's own count, or the ledger's level after the
    /// moves not yet on it (a unit that cannot pay now, or below 0, as empty; `paying`, the unit
    /// that just paid, as it is).
    private func plannableCounts(paying: Int? = nil) -> [Int] {
        guard var counts = levels else { return device.units ?? [] }
        for move in job?.moves ?? [] where counts.indices.contains(move.unit) { counts[move.unit] = move.level(after: counts[move.unit]) }
        return counts.indices.map { $0 == paying ? counts[$0] : device.unavailable.contains($0) ? 0 : max(counts[$0], 0) }
    }

    /// An asker waiting longer than `answerTimeout` hears `open`: the payout goes on.
    private mutating func answerOpenPastTimeout(_ now: Instant) -> [PayoutOutput] {
        guard let current = job, let ticket = current.ticket, now - current.askedAt > settings.answerTimeout else { return [] }
        job?.ticket = nil
        let record = PayoutRecord(order: current.order, source: settings.source, requestedSeq: 0, settledSeq: nil, steps: [], settlement: nil)
        return [.reply(ticket, .payout(record, coins: [:], repeated: false))]
    }

    // MARK: A payout

    private mutating func requested(_ request: PayoutRequest, _ ticket: Ticket, _ result: Result<PayoutLookup, LedgerError>, now: Instant) -> [PayoutOutput] {
        let id = request.requestID
        switch result {
        case .failure(let error):
            return [.reply(ticket, .unavailable("the ledger cannot be read, so the payout cannot be checked against earlier ones: nothing paid (\(error))"))]
        case .success(let found):
            guard let record = found.payout else { break }
            // Asked before: answered from the ledger, never paid again.
            let first = record.order
            guard first.amountMinor == request.amountMinor, request.currency == nil || request.currency == first.currency,
                  first.creditAccount == request.creditAccount else {
                return [.reply(ticket, .badRequest("request id \(id) was used for a payout of \(first.amountMinor) \(first.currency): a request id names one payout"))]
            }
            return [.reply(ticket, .payout(record, coins: device.coins?.coins ?? [:], repeated: true))]
        }
        guard !stopping else { return [.reply(ticket, .unavailable("the daemon is stopping: nothing paid; ask again with request id \(id) once it is back"))] }
        guard job == nil, unsettled.isEmpty, uncertain == nil else {
            return [.reply(ticket, .unavailable("another payout is under way or being settled: ask again when it is over"))]
        }
        guard let coins = device.coins else {
            return [.reply(ticket, .unavailable("the paying device is not set up yet: the values of its coins are not known"))]
        }
        if let currency = request.currency, currency != coins.currency {
            return [.reply(ticket, .badRequest("the change is paid in \(coins.currency), not \(currency)"))]
        }
        let order = PayoutOrder(requestID: id, amountMinor: request.amountMinor, currency: coins.currency, by: request.by, creditAccount: request.creditAccount)
        logger.notice("payout asked for", metadata: ["request_id": id, "amount_minor": "\(request.amountMinor)", "by": request.by])
        job = Job(order: order, ticket: ticket, askedAt: now, stage: .holding(since: now))
        return [.hold(true)] + advance(now)
    }

    /// The first count: the plan, and the first step journalled with the request; or the
    /// refusal, with nothing journalled.
    private mutating func start(_ coins: PayoutCoins, now: Instant) -> [PayoutOutput] {
        guard let current = job else { return [] }
        let tubes = plannableCounts()
        var run = PayoutRun(order: current.order, coins: coins.coins, valueStepMaximum: device.valueStepMaximum)
        switch run.plan(tubes: tubes) {
        case .cannotPayExact(let below, let above):
            return release(.refused(current.order, nearestBelow: below, nearestAbove: above), now: now)
        case .exact(let plan):
            guard var step = run.nextStep(tubes: tubes) else { return release(.unavailable("nothing to pay"), now: now) }
            step.deviceMark = device.marks[step.type]
            step.device = device.unitIdentities[step.type]
            job?.run = run
            job?.device = device.identity
            return commit([.payoutRequested(current.order, source: settings.source, plan: plan, device: device.identity),
                           .payoutDispensing(requestID: current.order.requestID, step: 1, step)], for: .start(step), moves: [])
        }
    }

    /// A DISPENSE counted: what it paid, then the next step journalled, or the settlement.
    private mutating func takeCount(_ now: Instant) -> [PayoutOutput] {
        taken(counted.removeFirst(), recounted: false, now: now)
    }

    private mutating func taken(_ count: DispenseCount, recounted: Bool, now: Instant) -> [PayoutOutput] {
        var count = count
        guard let current = job, case .dispensing = current.stage, var run = current.run, run.awaiting, let step = run.steps.last else {
            logger.warning("a DISPENSE was counted with no payout step waiting for it", metadata: ["type": "\(count.type)"])
            return advance(now)
        }
        if !recounted, run.countedShort(count) {
            // Short: a tube sensor that has not caught up says so as well as a changer that paid
            // short, jam or not (a jam with a lagging count looks like a step that paid nothing,
            // and its rest planned again would pay twice: model/payout.pml, payout-lag). Counted
            // again before it is believed.
            logger.notice(step.paysValue ? "a value step counted short: counting again" : "a DISPENSE counted short: counting again",
                          metadata: ["request_id": current.order.requestID, "type": "\(step.type)", "value_minor": "\(step.valueMinor)"])
            job?.stage = .recounting(count, after: device.countReads, since: now)
            return [.count]
        }
        if let paid = count.devicePaid {
            // A hopper's own account: its level falls by it with the next journal write.
            if paid > 0 {
                job?.moves.append(InventoryChange(source: settings.source, unit: step.type, coinID: step.coinID, valueMinor: step.valueMinor,
                                                  kind: .paid(requestID: current.order.requestID, step: run.steps.count, paid: paid,
                                                              unpaid: count.deviceUnpaid ?? max(step.count - paid, 0))))
            }
            if levels != nil { count.tubes = plannableCounts(paying: step.type) }
        }
        run.dispensed(count)
        if stopping { run.stopHere("the daemon stopped mid-payout: no further step was sent") }
        job?.run = run
        return [.failpoint(.payoutCounted)] + next(tubes: count.tubes, now: now)
    }

    /// The next step journalled (with the moves counted so far), or the settlement.
    private mutating func next(tubes: [Int], now: Instant) -> [PayoutOutput] {
        guard let current = job, var run = current.run else { return [] }
        guard var step = run.nextStep(tubes: tubes) else {
            job?.run = run
            return settle(run.settlement(), now: now)
        }
        step.deviceMark = device.marks[step.type]
        step.device = device.unitIdentities[step.type]
        job?.run = run
        return commit([.payoutDispensing(requestID: current.order.requestID, step: run.steps.count, step)], for: .step(step), moves: current.moves)
    }

    private mutating func send(_ step: PayoutStep) -> [PayoutOutput] {
        awaiting = .dispense(step)
        return [.failpoint(.payoutJournalled), step.paysValue ? .payValue(valueMinor: step.valueMinor) : .dispense(type: step.type, count: step.count)]
    }


    private mutating func dispenseSent(_ step: PayoutStep, _ sent: Bool, now: Instant) -> [PayoutOutput] {
        guard let current = job, var run = current.run else { return [] }
        if sent {
            job?.stage = .dispensing(since: now)
            if step.paysValue {
                logger.info("value payout asked for", metadata: ["request_id": current.order.requestID, "value_minor": "\(step.valueMinor)"])
            } else {
                logger.info("DISPENSE asked for", metadata: ["request_id": current.order.requestID, "type": "\(step.type)", "count": "\(step.count)",
                                                             "tube_before": "\(step.tubeBefore)"])
            }
            return advance(now)
        }
        // Journalled, not sent: it paid nothing, and the payout ends here with the rest owed.
        logger.warning("the device could not take the DISPENSE: not sent", metadata: ["type": "\(step.type)", "count": "\(step.count)"])
        run.notSent("the device could not take the DISPENSE")
        job?.run = run
        return settle(run.settlement(), now: now)
    }

    private mutating func settle(_ settlement: PayoutSettlement, now: Instant) -> [PayoutOutput] {
        guard let current = job else { return [] }
        job?.stage = .settling(settlement, retryAt: now)
        return commit([.payoutSettled(requestID: current.order.requestID, settlement)], for: .settle(settlement), moves: current.moves)
    }

    /// Given up before anything was journalled: nothing paid.
    private mutating func giveUp(_ why: String, now: Instant) -> [PayoutOutput] {
        guard let current = job else { return [] }
        logger.warning("payout given up, nothing paid: \(why)", metadata: ["request_id": current.order.requestID])
        return release(.unavailable("\(why): nothing paid; ask again with request id \(current.order.requestID)"), now: now)
    }

    /// The payout is over: the hold ends (unless payouts left open still need it), and the asker
    /// hears, if it has not yet.
    private mutating func release(_ answer: PayoutAnswer, now: Instant) -> [PayoutOutput] {
        guard let current = job else { return [] }
        job = nil
        var outputs: [PayoutOutput] = unsettled.isEmpty ? [.hold(false)] : []
        if let ticket = current.ticket { outputs.append(.reply(ticket, answer)) }
        return outputs + advance(now)
    }

    private func log(_ settlement: PayoutSettlement, order: PayoutOrder) {
        let metadata = ["request_id": order.requestID, "paid_minor": "\(settlement.paidMinor)", "debt_minor": "\(settlement.debtMinor)",
                        "after_restart": "\(settlement.afterRestart)"]
        switch settlement.outcome {
        case .done: logger.notice("payout done", metadata: metadata)
        case .partial, .failed:
            logger.critical("payout \(settlement.outcome.rawValue): the customer is owed \(settlement.debtMinor) \(order.currency)\(settlement.reason.map { ": \($0)" } ?? "")",
                            metadata: metadata)
        }
    }

    // MARK: The ledger

    private mutating func commit(_ entries: [LedgerEntry], for purpose: Commit, moves: [InventoryChange]) -> [PayoutOutput] {
        awaiting = .commit(purpose, moves: moves)
        return [.commit(moves.map(LedgerEntry.inventory) + entries)]
    }

    /// Moves the ledger holds now: the levels follow them, and they wait for no further write.
    private mutating func recorded(_ moves: [InventoryChange]) {
        for move in moves {
            if var counts = levels, counts.indices.contains(move.unit) {
                counts[move.unit] = move.level(after: counts[move.unit])
                levels = counts
            }
            job?.moves.removeAll { $0 == move }
        }
    }

    private mutating func committed(_ commit: Commit, moves: [InventoryChange], _ result: AppendResult, now: Instant) -> [PayoutOutput] {
        recorded(moves)
        let published: [PayoutOutput] = [.publish(result.events)]
        switch commit {
        case .start(let step), .step(let step):
            return published + send(step)
        case .settle(let settlement):
            guard let current = job, let run = current.run else { return published }
            log(settlement, order: current.order)
            var record = PayoutRecord(order: current.order, source: settings.source, requestedSeq: 0, settledSeq: result.events.last?.seq,
                                      steps: run.steps, settlement: settlement)
            record.device = current.device
            return published + release(.payout(record, coins: run.coins, repeated: false), now: now)
        case .settleOpen(let record, let settlement):
            log(settlement, order: record.order)
            return published + openSettled(now)
        case .inventory(let change, let ticket):
            let before = levels.map { $0.indices.contains(change.unit) ? $0[change.unit] : 0 } ?? 0
            recorded([change])
            logger.notice("inventory changed", metadata: ["unit": "\(change.unit)", "coin_id": change.coinID ?? "?", "level_before": "\(before)",
                                                          "level": "\(change.level(after: before))", "change": "\(change.kind)"])
            guard let ticket, let record = Self.record(change, before: before, seq: result.events.last?.seq ?? 0) else { return published + advance(now) }
            return published + [.reply(ticket, .inventory(record, repeated: false))] + advance(now)
        }
    }

    /// A commit reported a failure; what the ledger holds, read back, decides.
    private mutating func readBack(_ commit: Commit, moves: [InventoryChange], _ error: LedgerError, _ result: Result<PayoutLookup, LedgerError>,
                                   now: Instant) -> [PayoutOutput] {
        let found: PayoutLookup
        switch result {
        case .success(let lookup):
            found = lookup
        case .failure(let readError):
            logger.error("the ledger cannot be read back: whether the money-out commit landed is not known; nothing moves until it is",
                         metadata: ["error": "\(readError)"])
            switch commit {
            case .inventory(let change, let ticket):
                uncertain = (change, now + settings.ledgerRetry)
                guard let ticket else { return [] }
                return [.reply(ticket, .unavailable("the ledger reported a failure and cannot be read to say whether the change was recorded: ask again with the same request id (\(error))"))]
            case .settleOpen:
                unsettledRetryAt = now + settings.ledgerRetry
                return []
            case .start, .step, .settle:
                job?.stage = .unknown(commit, error, retryAt: now + settings.ledgerRetry)
                return []
            }
        }
        // Moves the ledger counted are its own now, whatever else landed.
        recorded(found.counted)
        let id = requestID(of: commit)
        switch commit {
        case .start(let step):
            guard found.payout != nil else {
                logger.error("payout not journalled: nothing paid", metadata: ["request_id": id, "error": "\(error)"])
                return release(.unavailable("the ledger could not journal the payout: nothing paid (\(error)); ask again with request id \(id)"), now: now)
            }
            // The request and its first step commit together: both are on the ledger.
            logger.warning("the payout journal the ledger reported failed is on it: its first step goes out", metadata: ["request_id": id])
            return send(step)
        case .step(let step):
            guard let current = job, var run = current.run else { return [] }
            if let record = found.payout, record.steps.count >= run.steps.count {
                logger.warning("the payout step the ledger reported failed is on it: it goes out", metadata: ["request_id": id])
                return send(step)
            }
            // Not journalled: not sent; the payout ends with the rest owed.
            logger.error("payout step not journalled: the payout ends here", metadata: ["request_id": id, "error": "\(error)"])
            run.notSent("the ledger could not journal it: \(error)")
            job?.run = run
            return settle(run.settlement(), now: now)
        case .settle(let settlement):
            if let record = found.payout, let settled = record.settlement {
                log(settled, order: record.order)
                return release(.payout(record, coins: job?.run?.coins ?? [:], repeated: false), now: now)
            }
            logger.error("payout settlement not journalled yet: the device stays held until it is", metadata: ["request_id": id])
            job?.stage = .settling(settlement, retryAt: now + settings.ledgerRetry)
            return []
        case .settleOpen(let record, _):
            guard let settled = found.payout?.settlement else {
                logger.error("could not settle the payout left open: the device stays held until the ledger can", metadata: ["request_id": id])
                unsettledRetryAt = now + settings.ledgerRetry
                return []
            }
            log(settled, order: record.order)
            return openSettled(now)
        case .inventory(_, let ticket):
            uncertain = nil
            guard let done = found.operatorChange else {
                guard let ticket else { return advance(now) }
                return [.reply(ticket, .unavailable("the ledger could not record it, so the level is unchanged (ask again with the same request id): \(error)"))] + advance(now)
            }
            // It landed: the level follows the record.
            if var counts = levels, counts.indices.contains(done.unit) {
                counts[done.unit] = done.level
                levels = counts
            }
            logger.warning("an inventory change the ledger reported failed had landed: the level follows it", metadata: ["request_id": done.requestID, "seq": "\(done.seq)"])
            guard let ticket else { return advance(now) }
            return [.reply(ticket, .inventory(done, repeated: false))] + advance(now)
        }
    }

    // MARK: Payouts left open

    /// The next payout left open, from the account of the held device, once it has counted its
    /// units after holding still (not a count its setup read).
    private mutating func settleNextOpen(_ now: Instant) -> [PayoutOutput] {
        guard device.heldStill, device.coins != nil, countsKnown || device.countReads > 0 else { return [] }
        guard let after = unsettledCountAfter else {
            unsettledCountAfter = device.countReads
            return [.count]
        }
        guard device.countReads > after, countsKnown, now >= unsettledRetryAt ?? now else { return [] }
        let record = unsettled[0]
        awaiting = .account(record)
        return [.askAccount(record)]
    }

    /// The device's account of the payout left open: its settlement journalled.
    private mutating func settleOpen(_ record: PayoutRecord, _ account: PayoutRestartAccount, now: Instant) -> [PayoutOutput] {
        var settlement: PayoutSettlement
        var moves: [InventoryChange] = []
        switch account {
        case .wait:
            return []
        case .tubes(let tubes, let reported):
            // Only the device that paid can say what it paid.
            if let paid = record.device, let current = device.identity, paid != current {
                settlement = PayoutRun.unverified(record, "the device at the address is not the one that paid (it was \(paid), it is \(current)): its count cannot say what was paid; check the cash before paying the debt")
            } else {
                settlement = PayoutRun.settle(record, tubes: tubes, reported: reported, values: (device.coins?.coins ?? [:]).mapValues(\.valueMinor))
            }
        case .lastStep(let paid):
            // The earlier steps are on the ledger's levels; the last one's coins come off here.
            var counts = levels ?? []
            guard let last = record.steps.last, counts.indices.contains(last.type) else {
                settlement = PayoutRun.settle(record, tubes: counts, reported: counts.count)
                break
            }
            counts[last.type] -= paid
            settlement = PayoutRun.settle(record, tubes: counts, reported: counts.count)
            // Recorded only where the settlement believes the device.
            if paid > 0, settlement.paidMinor > 0 {
                moves = [InventoryChange(source: settings.source, unit: last.type, coinID: last.coinID, valueMinor: last.valueMinor,
                                         kind: .paid(requestID: record.order.requestID, step: record.steps.count, paid: paid, unpaid: max(last.count - paid, 0)))]
            }
        case .lastStepUnknown(let why):
            let counts = levels ?? []
            settlement = PayoutRun.settle(record, tubes: counts, reported: counts.count)
            if settlement.debtMinor > 0 { settlement.reason = why + (settlement.reason.map { "; " + $0 } ?? "") }
        case .unverifiable(let why):
            settlement = PayoutRun.unverified(record, why)
        }
        return commit([.payoutSettled(requestID: record.order.requestID, settlement)], for: .settleOpen(record, settlement), moves: moves)
    }

    /// The first payout left open is settled: the next, or the hold ends.
    private mutating func openSettled(_ now: Instant) -> [PayoutOutput] {
        unsettled.removeFirst()
        unsettledRetryAt = nil
        let outputs: [PayoutOutput] = unsettled.isEmpty && job == nil ? [.hold(false)] : []
        return outputs + advance(now)
    }

    // MARK: Inventory: a unit whose level the ledger keeps

    private mutating func inventoryAsked(_ request: InventoryRequest, _ ticket: Ticket) -> [PayoutOutput] {
        guard settings.capabilities.contains(.ledgerKeepsLevels), let coins = device.coins, levels != nil else {
            return [.reply(ticket, .unavailable("this device has no payout units whose level the ledger keeps: refill and float are for payout hoppers (a changer counts its own tubes)"))]
        }
        let matches = coins.coins.filter { "\($0.key)" == request.unit || $0.value.coinID == request.unit }.keys.sorted()
        guard let unit = matches.first, matches.count == 1 else {
            let known = coins.coins.sorted { $0.key < $1.key }.map { "\($0.key) (\($0.value.coinID ?? "?"))" }.joined(separator: ", ")
            return [.reply(ticket, .badRequest(matches.isEmpty ? "no payout unit \(request.unit): the units are \(known)"
                                                : "\(request.unit) names more than one unit (\(known)): give the unit number"))]
        }
        guard job == nil, unsettled.isEmpty, uncertain == nil else {
            return [.reply(ticket, .unavailable("a payout is under way or being settled: refill or count the hopper once it is over"))]
        }
        let coin = coins.coins[unit]!
        let kind: InventoryChange.Kind = switch request.kind {
        case .refill(let added): .refilled(added: added, by: request.by, requestID: request.requestID)
        case .float(let level): .set(level: level, by: request.by, requestID: request.requestID)
        }
        let change = InventoryChange(source: settings.source, unit: unit, coinID: coin.coinID, valueMinor: coin.valueMinor, kind: kind)
        awaiting = .inventoryRequest(change, ticket)
        return [.lookUp(requestID: request.requestID, moves: [])]
    }

    private mutating func inventoryLookedUp(_ change: InventoryChange, _ ticket: Ticket, _ result: Result<PayoutLookup, LedgerError>) -> [PayoutOutput] {
        switch result {
        case .failure(let error):
            return [.reply(ticket, .unavailable("the ledger could not be read, so nothing is recorded; ask again with the same request id: \(error)"))]
        case .success(let found):
            if let done = found.operatorChange { return [.reply(ticket, Self.repeated(done, asked: change))] }
            return commit([.inventory(change)], for: .inventory(change, ticket), moves: [])
        }
    }

    /// A request id already on the ledger: answered with what was recorded then (the levels of
    /// that moment), if it asks the same; otherwise refused, since one id is one action.
    static func repeated(_ done: OperatorInventoryRecord, asked change: InventoryChange) -> PayoutAnswer {
        let (refill, coins): (Bool, Int) = switch change.kind {
        case .refilled(let added, _, _): (true, added)
        case .set(let level, _, _): (false, level)
        case .paid: (false, -1)
        }
        guard done.refill == refill, done.unit == change.unit, done.source == change.source, done.coins == coins else {
            let was = "\(done.refill ? "a refill of \(done.coins) coin(s)" : "a float of \(done.coins) coin(s)") into unit \(done.unit) (seq \(done.seq))"
            return .badRequest("request id \(done.requestID) was \(was): a retry asks the same, a new action takes a new id")
        }
        return .inventory(done, repeated: true)
    }

    /// An operator's change as the ledger records it (nil for a step's move, which no operator
    /// asked for), as a repeat of its request id reads it back.
    public static func record(_ change: InventoryChange, before: Int, seq: Int64) -> OperatorInventoryRecord? {
        let (refill, coins, by, requestID): (Bool, Int, String, String?) = switch change.kind {
        case .refilled(let added, let by, let id): (true, added, by, id)
        case .set(let level, let by, let id): (false, level, by, id)
        case .paid: (false, 0, "", nil)
        }
        guard let requestID else { return nil }
        return OperatorInventoryRecord(requestID: requestID, seq: seq, source: change.source, refill: refill, unit: change.unit, coinID: change.coinID,
                                       coins: coins, levelBefore: before, level: change.level(after: before), by: by)
    }
}

extension Optional {
    fileprivate mutating func take() -> Wrapped? {
        defer { self = nil }
        return self
    }
}
