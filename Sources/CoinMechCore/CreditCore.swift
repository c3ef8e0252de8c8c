import CoinMechModel

/// The customer's credit, held by the daemon: a pure state machine, as `PayoutCore` is. Coins
/// raise the credit in the ledger's own transaction (no input here); the sale application's
/// commands lower it: a sale approved once per request id and never beyond the credit, a sale
/// put back, the credit paid back as change through the payout core.
///
/// It keeps no balance of its own: each command reads the ledger (`.lookUp`) and is judged by
/// what it holds, and the ledger's writer checks again in the commit's transaction (a balance
/// never below 0, a request id used once per kind). A balance in memory could drift from the
/// ledger across a failed commit or a restart; one read per command, at a person's pace, costs
/// nothing that matters. Commands are taken one at a time, in order.
public struct CreditCore: Sendable {
    public struct Settings: Sendable {
        public var source: String
        /// The account coins raise: the source's own.
        public var account: String
        /// The currencies the source takes: an account each.
        public var currencies: [String]
        /// A device pays change (a cancel pays the credit back); without one the credit stays.
        public var paysOut: Bool
        /// How long after a start whose accounts were not written it is tried again.
        public var ledgerRetry: Duration = .seconds(1)
        /// Credit left standing: kept, expired or paid back once untouched this long.
        public var standing: StandingCredit = .keep
        /// How often standing credit is looked for (one ledger read).
        public var reviewInterval: Duration = .seconds(5)

        public init(source: String, currencies: [String], paysOut: Bool) {
            self.source = source
            account = source
            self.currencies = currencies
            self.paysOut = paysOut
        }
    }

    private enum Stage: Sendable {
        /// The accounts' commit at the start.
        case opening
        case lookingUp(CreditCommand, Ticket)
        case committing(CreditCommand, Ticket, CreditMove)
        /// A commit that reported a failure, read back.
        case readingBack(CreditCommand, Ticket, LedgerError)
        /// A cancel's payout asked of the payout core, of the credit `balance`;
        /// `retried`: a second ask for the nearest amount the coins make.
        case returning(CreditCommand, Ticket, balance: Int64, retried: Bool)
        /// Standing credit looked for.
        case reviewing
        /// A cancel's payout answered: the account read back for the balance it left.
        case reportingReturn(Ticket, PayoutAnswer)
        /// Standing credit taken to the cash box.
        case expiring
    }

    /// Who waits on what the standing-credit rule asks: nobody (no operator's ticket is this high).
    static let ruleTicket = Ticket(.max)
    static let ruleName = "coinmechd (standing credit)"

    public private(set) var settings: Settings
    private var stage: Stage?
    private var waiting: [(CreditCommand, Ticket)] = []
    private var opened = false
    private var retryAt: Instant?
    private var nextReview: Instant?
    /// When each standing balance was first seen, by its currency and the event that last
    /// moved it: how long it has stood is timed on the monotonic clock, never the wall clock a
    /// cabinet without a real-time clock steps at boot. A restart starts the time again.
    private var standingSince: [String: Instant] = [:]
    /// A rule that could not be carried out (nothing paid back) is not tried again before this.
    private var ruleRetry: [String: Instant] = [:]

    public init(settings: Settings) {
        self.settings = settings
    }

    /// Currencies a reload brought in, whose accounts the shell has opened.
    public mutating func take(currencies: [String]) {
        for currency in currencies where !settings.currencies.contains(currency) { settings.currencies.append(currency) }
    }

    /// Whether the accounts are on the ledger (commands are answered once they are).
    public var isOpen: Bool { opened }

    /// The first outputs: the source's accounts opened (those open already are left as they are).
    public mutating func start() -> [CreditOutput] {
        stage = .opening
        return [.commit([.creditOpened(source: settings.source, account: settings.account, currencies: settings.currencies, by: "coinmechd")])]
    }

    public mutating func step(_ input: CreditInput, at now: Instant) -> [CreditOutput] {
        // What the standing-credit rule asked is nobody's command: no reply goes out for it.
        steps(input, at: now).filter { output in
            if case .reply(let ticket, _) = output { return ticket != Self.ruleTicket }
            return true
        }
    }

    private mutating func steps(_ input: CreditInput, at now: Instant) -> [CreditOutput] {
        switch input {
        case .command(let command, let ticket):
            if let why = Self.malformed(command) { return [.reply(ticket, why)] }
            waiting.append((command, ticket))
            return next(now)
        case .tick:
            if stage == nil, !opened, let retryAt, now >= retryAt { return start() }
            if stage == nil, waiting.isEmpty, opened, settings.standing.afterSeconds != nil, now >= nextReview ?? now {
                nextReview = now + settings.reviewInterval
                stage = .reviewing
                return [.lookUp(requestID: "")]
            }
            return next(now)
        case .lookedUp(let result):
            return lookedUp(result, now: now)
        case .committed(let result):
            return committed(result, now: now)
        case .commitFailed(let error):
            return commitFailed(error, now: now)
        case .payoutAnswered(let answer):
            return payoutAnswered(answer, now: now)
        }
    }

    /// The next command waiting, if nothing is under way.
    private mutating func next(_ now: Instant) -> [CreditOutput] {
        guard stage == nil, !waiting.isEmpty else { return [] }
        let (command, ticket) = waiting.removeFirst()
        guard opened else {
            return [.reply(ticket, .unavailable("the credit accounts could not be written yet: nothing done; ask again"))] + next(now)
        }
        stage = .lookingUp(command, ticket)
        return [.lookUp(requestID: command.requestID)]
    }

    /// What no ledger need be read to refuse.
    static func malformed(_ command: CreditCommand) -> CreditAnswer? {
        guard case .spend(_, let amount, _, let item, _) = command else { return nil }
        if amount <= 0 { return .badRequest(field: "amount_minor", "a sale's amount is above 0, not \(amount)") }
        if let item, item.isEmpty || item.utf8.count > 64 { return .badRequest(field: "item", "an item is named in 1 to 64 bytes") }
        return nil
    }

    // MARK: Outcomes

    private mutating func lookedUp(_ result: Result<CreditLookup, LedgerError>, now: Instant) -> [CreditOutput] {
        switch stage {
        case .lookingUp(let command, let ticket):
            stage = nil
            switch result {
            case .failure(let error):
                return [.reply(ticket, .unavailable("the ledger cannot be read, so the credit cannot be checked: nothing done (\(error))"))] + next(now)
            case .success(let found):
                return judge(command, ticket, found, now: now)
            }
        case .reviewing:
            stage = nil
            guard case .success(let found) = result else { return next(now) }
            return review(found, now: now)
        case .reportingReturn(let ticket, let answer):
            stage = nil
            // What stays credit is the account as the ledger has it now (what no coins made, and
            // coins that came meanwhile), not what was asked: a repeat answers the same.
            guard case .payout(let record, _, _) = answer else { return [.reply(ticket, .returned(answer, keptMinor: 0))] + next(now) }
            let held = (try? result.get())?.accounts.first { $0.account == settings.account && $0.currency == record.order.currency }
            return [.reply(ticket, .returned(answer, keptMinor: held?.balanceMinor ?? 0))] + next(now)
        case .readingBack(let command, let ticket, let error):
            stage = nil
            guard case .success(let found) = result else {
                return [.reply(ticket, .unavailable("the ledger reported a failure (\(error)) and cannot be read back: ask again under the same request id"))] + next(now)
            }
            // Landed after all: the answer the commit would have given. Not landed: judged
            // again on what the ledger holds now (a precondition means it moved meanwhile).
            if let answer = Self.recorded(command, found, repeated: false) { return [.reply(ticket, answer)] + next(now) }
            if case .precondition = error { return judge(command, ticket, found, now: now) }
            return [.reply(ticket, .unavailable("the ledger cannot write (\(error)): nothing done; ask again under the same request id"))] + next(now)
        default:
            return []
        }
    }

    /// Standing credit under the rule: the first account untouched for long enough expires or
    /// is paid back. Its request id names the event that last moved it, so a move in between
    /// (a coin, a sale) makes another id, and a rule applied once is never applied twice.
    private mutating func review(_ found: CreditLookup, now: Instant) -> [CreditOutput] {
        guard let after = settings.standing.afterSeconds else { return next(now) }
        let standing = found.accounts.filter { $0.account == settings.account && $0.balanceMinor > 0 && settings.currencies.contains($0.currency) }
        let keys = Set(standing.map(Self.standingKey))
        standingSince = standingSince.filter { keys.contains($0.key) }
        ruleRetry = ruleRetry.filter { keys.contains($0.key) }
        var due: CreditAccount?
        for account in standing {
            let key = Self.standingKey(account)
            let since = standingSince[key] ?? now
            standingSince[key] = since
            if due == nil, now - since >= .seconds(after), now >= ruleRetry[key] ?? now { due = account }
        }
        guard let due else { return next(now) }
        // Tried once per standing balance and back-off: one that cannot be paid back (the coins
        // held make none of it, the changer is busy) does not hold the changer every review.
        ruleRetry[Self.standingKey(due)] = now + .seconds(max(after, 60))
        switch settings.standing {
        case .keep:
            return next(now)
        case .expire:
            let expiry = CreditMove(kind: .expired, requestID: "expiry-\(due.movedSeq)", source: settings.source, account: settings.account,
                                    currency: due.currency, amountMinor: due.balanceMinor, by: Self.ruleName)
            stage = .expiring
            return [.commit([.credit(expiry)])]
        case .payBack:
            guard settings.paysOut else { return next(now) }
            let id = "standing-\(due.movedSeq)"
            let asked = min(due.balanceMinor, PayoutPlanner.maximumAmount)
            stage = .returning(.cancel(requestID: id, by: Self.ruleName), Self.ruleTicket, balance: due.balanceMinor, retried: false)
            return [.payout(PayoutRequest(requestID: id, amountMinor: asked, currency: due.currency, by: Self.ruleName, creditAccount: settings.account))]
        }
    }

    private static func standingKey(_ account: CreditAccount) -> String { "\(account.currency)#\(account.movedSeq)" }

    /// A command judged on what the ledger holds: answered from it, refused, or committed.
    private mutating func judge(_ command: CreditCommand, _ ticket: Ticket, _ found: CreditLookup, now: Instant) -> [CreditOutput] {
        let id = command.requestID
        switch command {
        case .spend(_, let amount, let currency, let item, let by):
            if let sale = found.moves.first(where: { $0.move.kind == .spent }) {
                guard sale.move.amountMinor == amount, currency == nil || currency == sale.move.currency, sale.move.item == item else {
                    return [.reply(ticket, .badRequest(field: "request_id", "request id \(id) was used for a sale of \(sale.move.amountMinor) \(sale.move.currency)"
                                                         + (sale.move.item.map { " (\($0))" } ?? "") + ": a request id names one sale"))] + next(now)
                }
                if let refund = found.moves.first(where: { $0.move.kind == .refunded }) {
                    return [.reply(ticket, .spentAndRefunded(sale: sale, refund: refund))] + next(now)
                }
                return [.reply(ticket, .spent(sale, repeated: true))] + next(now)
            }
            if let payout = found.payout {
                return [.reply(ticket, .badRequest(field: "request_id", "request id \(id) names a payout of \(payout.order.amountMinor) \(payout.order.currency): a sale takes an id of its own"))] + next(now)
            }
            guard let account = account(found, currency) else { return [.reply(ticket, badCurrency(currency))] + next(now) }
            guard account.balanceMinor >= amount else {
                return [.reply(ticket, .short(balanceMinor: account.balanceMinor, currency: account.currency))] + next(now)
            }
            let sale = CreditMove(kind: .spent, requestID: id, source: settings.source, account: settings.account, currency: account.currency,
                                  amountMinor: amount, item: item, by: by)
            stage = .committing(command, ticket, sale)
            return [.commit([.credit(sale)])]
        case .refund(_, let by):
            if let answer = Self.recorded(command, found, repeated: true) { return [.reply(ticket, answer)] + next(now) }
            guard let sale = found.moves.first(where: { $0.move.kind == .spent }) else {
                return [.reply(ticket, .badRequest(field: "request_id", "no sale was approved under request id \(id): nothing to refund"))] + next(now)
            }
            var refund = sale.move
            refund.kind = .refunded
            refund.item = nil
            refund.by = by
            stage = .committing(command, ticket, refund)
            return [.commit([.credit(refund)])]
        case .cancel(_, let by):
            if let payout = found.payout {
                // Asked before: the payout core answers it from the ledger, never paying again.
                guard payout.order.creditAccount == settings.account else {
                    return [.reply(ticket, .badRequest(field: "request_id", "request id \(id) names a payout that did not pay credit back"))] + next(now)
                }
                stage = .returning(command, ticket, balance: payout.order.amountMinor, retried: true)
                return [.payout(PayoutRequest(requestID: id, amountMinor: payout.order.amountMinor, currency: payout.order.currency, by: by,
                                              creditAccount: settings.account))]
            }
            if !found.moves.isEmpty {
                return [.reply(ticket, .badRequest(field: "request_id", "request id \(id) names a sale: paying credit back takes an id of its own"))] + next(now)
            }
            guard let account = found.accounts.first(where: { $0.account == settings.account && $0.balanceMinor > 0 && settings.currencies.contains($0.currency) }) else {
                let currency = found.accounts.first?.currency ?? settings.currencies.first ?? ""
                return [.reply(ticket, .kept(balanceMinor: 0, currency: currency, reason: "there is no credit to pay back"))] + next(now)
            }
            guard settings.paysOut else {
                return [.reply(ticket, .kept(balanceMinor: account.balanceMinor, currency: account.currency,
                                             reason: "no device here pays change: the credit stays"))] + next(now)
            }
            // Change, not a cash withdrawal: what is above a payout's largest amount stays credit.
            let asked = min(account.balanceMinor, PayoutPlanner.maximumAmount)
            stage = .returning(command, ticket, balance: account.balanceMinor, retried: false)
            return [.payout(PayoutRequest(requestID: id, amountMinor: asked, currency: account.currency, by: by, creditAccount: settings.account))]
        }
    }

    /// The answer a command already on the ledger gets, if it is there; `repeated`: by an
    /// earlier ask (not this one's commit, read back).
    private static func recorded(_ command: CreditCommand, _ found: CreditLookup, repeated: Bool) -> CreditAnswer? {
        switch command {
        case .spend(_, let amount, _, let item, _):
            guard let sale = found.moves.first(where: { $0.move.kind == .spent }), sale.move.amountMinor == amount, sale.move.item == item else { return nil }
            return .spent(sale, repeated: repeated)
        case .refund:
            return found.moves.first { $0.move.kind == .refunded }.map { .refunded($0, repeated: repeated) }
        case .cancel:
            return nil
        }
    }

    private func account(_ found: CreditLookup, _ currency: String?) -> CreditAccount? {
        // Accounts of currencies no longer taken keep their balance on the ledger, but sell nothing.
        let mine = found.accounts.filter { $0.account == settings.account && settings.currencies.contains($0.currency) }
        guard let currency else { return mine.count == 1 ? mine[0] : nil }
        return mine.first { $0.currency == currency }
    }

    private func badCurrency(_ currency: String?) -> CreditAnswer {
        let held = settings.currencies.joined(separator: ", ")
        guard let currency else { return .badRequest(field: "currency", "the credit is held in \(held): name the currency") }
        return .badRequest(field: "currency", "the credit is held in \(held), not \(currency)")
    }

    private mutating func committed(_ result: AppendResult, now: Instant) -> [CreditOutput] {
        switch stage {
        case .opening:
            stage = nil
            opened = true
            return (result.events.isEmpty ? [] : [.publish(result.events)]) + next(now)
        case .expiring:
            stage = nil
            return [.publish(result.events)] + next(now)
        case .committing(_, let ticket, let move):
            stage = nil
            guard let event = result.events.first, let after = event.creditBalanceMinor else {
                return [.reply(ticket, .unavailable("the ledger recorded nothing: ask again under the same request id"))] + next(now)
            }
            let record = CreditMoveRecord(move: move, seq: event.seq, balanceAfterMinor: after)
            let answer: CreditAnswer = move.kind == .refunded ? .refunded(record, repeated: false) : .spent(record, repeated: false)
            return [.publish(result.events), .reply(ticket, answer)] + next(now)
        default:
            return []
        }
    }

    private mutating func commitFailed(_ error: LedgerError, now: Instant) -> [CreditOutput] {
        switch stage {
        case .opening:
            stage = nil
            retryAt = now + settings.ledgerRetry
            return next(now)
        case .committing(let command, let ticket, _):
            stage = .readingBack(command, ticket, error)
            return [.lookUp(requestID: command.requestID)]
        case .expiring:
            // Moved meanwhile (a precondition), or not written: judged again at the next review.
            stage = nil
            return next(now)
        default:
            return []
        }
    }

    private mutating func payoutAnswered(_ answer: PayoutAnswer, now: Instant) -> [CreditOutput] {
        guard case .returning(let command, let ticket, let balance, let retried) = stage, case .cancel(let id, let by) = command else { return [] }
        stage = nil
        switch answer {
        case .payout:
            stage = .reportingReturn(ticket, answer)
            return [.lookUp(requestID: id)]
        case .refused(let order, let below, _) where !retried && below > 0:
            // No coins held make the whole credit: the nearest amount below it is paid back,
            // and the rest stays credit (a vending machine's "exact change only").
            stage = .returning(command, ticket, balance: balance, retried: true)
            return [.payout(PayoutRequest(requestID: id, amountMinor: below, currency: order.currency, by: by, creditAccount: settings.account))]
        case .refused(let order, _, _):
            return [.reply(ticket, .kept(balanceMinor: balance, currency: order.currency, reason: "no coins held make any part of it: the credit stays"))] + next(now)
        case .unavailable(let why):
            return [.reply(ticket, .unavailable(why))] + next(now)
        case .badRequest(let why):
            return [.reply(ticket, .badRequest(field: "request_id", why))] + next(now)
        case .inventory:
            return [.reply(ticket, .unavailable("the payout core answered a cancel with an inventory change"))] + next(now)
        }
    }
}
