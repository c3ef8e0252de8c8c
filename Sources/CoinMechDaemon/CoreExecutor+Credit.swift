import CoinMechCore
import CoinMechFailpoints
import CoinMechLedger
import CoinMechModel
import CoinMechProtocol

/// The credit core's shell: its ledger reads and commits, the payouts it asks of the payout
/// core (a cancel), and its replies. On the deciding loop's thread, as the other cores'.
extension CoreExecutor {
    /// Opens the source's accounts (those open already are left as they are).
    func startCredit() {
        guard var core = credit else { return }
        let outputs = core.start()
        credit = core
        carryOut(outputs)
    }

    /// Opens accounts for currencies a reload brings in (those open are left as they are): a
    /// coin of a currency without one would raise no credit.
    func openCredit(currencies: [String]) {
        guard var core = credit else { return }
        let source = core.settings.source
        do throws(LedgerError) {
            let result = try ledger.append([.creditOpened(source: source, account: core.settings.account, currencies: currencies, by: "coinmechd")])
            if !result.events.isEmpty { hub.publish(result.events) }
            core.take(currencies: currencies)
            credit = core
        } catch {
            logger.critical("the credit accounts of a reloaded chain's currencies cannot be written: its coins raise no customer credit until a restart opens them",
                            metadata: ["currencies": "\(currencies)", "error": "\(error)"])
        }
    }

    func stepCredit(_ input: CreditInput) {
        guard var core = credit else { return }
        if case .command(let command, let ticket) = input { creditCommands[ticket] = command }
        let outputs = core.step(input, at: .now)
        credit = core
        carryOut(outputs)
    }

    private func carryOut(_ outputs: [CreditOutput]) {
        for output in outputs {
            switch output {
            case .lookUp(let requestID):
                // An empty id (the standing-credit review) reads the accounts alone, as the payout
                // core's look-up does.
                stepCredit(.lookedUp(Result { () throws(LedgerError) in
                    CreditLookup(accounts: try ledger.creditAccounts(source: decider.sourceName),
                                 moves: requestID.isEmpty ? [] : try ledger.creditMoves(requestID: requestID),
                                 payout: requestID.isEmpty ? nil : try ledger.payout(requestID: requestID))
                }))
            case .commit(let entries):
                do throws(LedgerError) {
                    // A short wait for another writer (an operator's sqlite3): the deciding
                    // thread answers coins too. Busy, the core reads back and answers unavailable.
                    let result = try ledger.append(entries, busyTimeoutMilliseconds: 200)
                    // A disk error after the commit landed (a test's failpoint): the core reads it back.
                    if entries.contains(where: \.isCreditMove), failpoints.fails(.creditCommitted) {
                        throw .write(message: "failpoint credit-committed: the commit landed, and is reported failed")
                    }
                    stepCredit(.committed(result))
                } catch {
                    stepCredit(.commitFailed(error))
                }
            case .payout(let request):
                guard payout != nil else {
                    stepCredit(.payoutAnswered(.unavailable("this mech gives no change: the credit stays")))
                    continue
                }
                let ticket = freshTicket()
                creditPayouts.insert(ticket)
                stepPayout(.payout(request, ticket: ticket))
            case .publish(let events):
                hub.publish(events)
            case .reply(let ticket, let answer):
                publishStatus()
                guard let command = creditCommands.removeValue(forKey: ticket) else { continue }
                complete(ticket, OperatorReplies.reply(answer, to: command))
            }
        }
    }
}

extension LedgerEntry {
    /// A sale, a refund or an expiry.
    fileprivate var isCreditMove: Bool {
        if case .credit = self { return true }
        return false
    }
}
