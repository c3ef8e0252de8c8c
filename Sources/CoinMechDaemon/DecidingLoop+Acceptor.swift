import CoinFacts
import CoinMechCCTalk
import CoinMechChain
import CoinMechPluginABI
import CoinMechCore
import CoinMechLedger
import CoinMechModel
import CoinMechProtocol
import CoinMechSources
import CoinMechSupport
import Logging

extension DecidingLoop {
    /// Records what an acceptor's engine (ccTalk, MDB) reported, each batch in one transaction
    /// with its counter row, before anything of it is published or the engine goes on.
    func serviceAcceptor() {
        guard let acceptorMech, var core = acceptor else { return }
        defer { acceptor = core }
        for report in acceptorMech.takeReports() {
            log(report)
            guard let money = report.event, let commit = core.handle(money, decide: decideCoin) else { continue }
            write(commit, &core, mech: acceptorMech)
        }
        if let notes = core.pendingNotes() { write(notes, &core, mech: acceptorMech) }
    }

    /// Enables the positions the operator allows and the chain can credit (after a reload
    /// swapped a chain in).
    func allowAcceptorPositions() {
        guard let acceptorMech, let allowed = operatorPositions else { return }
        acceptorMech.allow(allowed, creditable: Self.creditableCoinIDs(chain.current, logger: logger))
        serviceAcceptor()
    }

    /// The coin ids the chain credits: those its coin-id links list in their description
    /// (`credits`: id → currency, code, value) as coins of this cabinet. A position whose id is
    /// not among them stays closed, so the acceptor returns the coin instead of keeping it
    /// uncredited; a link that takes coin ids but does not say which opens none.
    static func creditableCoinIDs(_ chain: Chain, logger: Logger?) -> Set<String> {
        var ids: Set<String> = []
        for link in chain.links where link.origin.readingKinds & UInt32(COINMECH_KINDS_COIN_ID) != 0 {
            guard let credits = link.origin.description.flatMap(JSON.parse)?["credits"]?.object else {
                logger?.warning("link '\(link.name)' takes coin ids but does not list what it credits (its description has no 'credits'): the acceptor's positions stay closed to it")
                continue
            }
            for (id, coin) in credits {
                guard let currency = coin["currency"]?.string, let code = coin["code"]?.string, let value = coin["value"]?.int else { continue }
                if chain.acceptPolicy.coins.coins.contains(Denomination(currency: currency, code: code, valueMinor: value)) {
                    ids.insert(id)
                } else {
                    logger?.warning("link '\(link.name)' credits coin id \(id) as \(currency) \(code) at \(value), which is not a coin of this cabinet: its position stays closed")
                }
            }
        }
        if ids.isEmpty { logger?.warning("no link of the chain credits a coin id of this cabinet: every coin position of the acceptor stays inhibited") }
        return ids
    }

    private func write(_ commit: AcceptorCommit, _ core: inout AcceptorCore, mech: any AcceptorMech) {
        let money = commit.batch?.hasCredits == true
        if money { failpoints.hit(.beforeCommit) }
        let next: AcceptorCore.Next
        let wasFailing = core.ledgerFailure != nil
        do throws(LedgerError) {
            let outcome: AcceptorAppend
            if let change = commit.change {
                outcome = try ledger.append(commit.entries, moving: change)
            } else {
                outcome = .applied(try ledger.append(commit.entries))
            }
            next = core.written(commit, outcome)
            if wasFailing { logger.notice("the acceptor's events are recorded again; it takes coins again") }
        } catch {
            // Once per outage: the engine offers the batch again at every poll.
            logger.log(level: wasFailing ? .debug : .critical, "could not record the acceptor's events: it stays inhibited (returning every coin) until the ledger can",
                       metadata: ["error": "\(error)"])
            next = core.failed(commit, error)
        }
        switch next {
        case .publish(let events):
            if money { failpoints.hit(.afterCommit) }
            hub.publish(events)
            if money { failpoints.hit(.published) }
        case .rewind(let state):
            logger.warning("the ledger's counter of the acceptor moved under the batch; nothing written, going on from it",
                           metadata: ["counter": "\(state.map { "epoch \($0.epoch) event \($0.eventNumber)" } ?? "none")"])
            mech.rewind(to: state)
        case .retry(let batch):
            if batch != nil { mech.notRecorded() }
        }
    }

    /// Asks the current chain about a coin the acceptor took.
    private func decideCoin(_ coin: AcceptorCore.Coin) -> Decided {
        let decision = chain.current.decide(Reading(
            deviceSeq: coin.number, timestampNanoseconds: Instant.now.nanoseconds, coinPosition: UInt32(coin.position),
            coinID: coin.coinID, sorterPath: UInt32(coin.sorterPath), source: sourceName))
        let verdict: DecisionRecord.Verdict
        switch decision.verdict {
        case .accept(let denomination): verdict = .accept(currency: denomination.currency, code: denomination.code, valueMinor: denomination.valueMinor)
        case .reject(let rejection): verdict = .reject(reason: rejection.reason, message: rejection.message)
        }
        return Decided(verdict: verdict, link: decision.linkName, chainGeneration: decision.chainGeneration, decidedAt: .now)
    }

    private func log(_ report: AcceptorReport) {
        switch report.level {
        case .debug: logger.debug("\(report.message)")
        case .notice: logger.notice("\(report.message)")
        case .warning: logger.warning("\(report.message)")
        case .critical: logger.critical("\(report.message)")
        }
    }
}
