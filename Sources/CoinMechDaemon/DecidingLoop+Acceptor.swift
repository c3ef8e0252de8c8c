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
    /// Records what a ccTalk acceptor's engine reported, each batch in one transaction with its
    /// counter state, before anything of it is published or the engine goes on.
    func serviceAcceptor() {
        guard let acceptorMech, var core = acceptor else { return }
        defer { acceptor = core }
        for event in acceptorMech.takeHostEvents() {
            log(event)
            guard let money = AcceptorEvent(event), let commit = core.handle(money, decide: decideCoin) else { continue }
            // The engine takes back its own batch when the ledger could not record it.
            let offered: CCTalkLedgerBatch? = if case .batch(let batch) = event { batch } else { nil }
            write(commit, &core, mech: acceptorMech, offered: offered)
        }
        if let notes = core.pendingNotes() { write(notes, &core, mech: acceptorMech, offered: nil) }
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

    private func write(_ commit: AcceptorCommit, _ core: inout AcceptorCore, mech: CCTalkMech, offered: CCTalkLedgerBatch?) {
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
                           metadata: ["counter": "\(state.map { String(describing: CCTalkCounterState($0)) } ?? "none")"])
            mech.rewind(to: state.map(CCTalkCounterState.init))
        case .retry(let batch):
            if batch != nil, let offered { mech.notRecorded(offered) }
        }
    }

    /// The device an `acceptor_identified` event recorded (its serial number and coin ids);
    /// nil without a serial number, which is what a device is recognised by.
    static func identity(recorded detail: [String: String], address: UInt8) -> CCTalkDeviceIdentity? {
        guard let serial = detail["serial_number"].flatMap(UInt32.init) else { return nil }
        var identity = CCTalkDeviceIdentity(address: address)
        identity.serialNumber = serial
        identity.manufacturer = detail["manufacturer"]
        identity.productCode = detail["product"]
        for pair in (detail["coins"] ?? "").split(separator: ",") {
            let parts = pair.split(separator: "=", maxSplits: 1)
            guard parts.count == 2, let position = Int(parts[0]), CoinPositionMask.positions.contains(position) else { continue }
            identity.coinIDs[position] = CoinID(String(parts[1]))
        }
        return identity
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

    private func log(_ event: CCTalkHostEvent) {
        switch event {
        case .batch(let batch):
            if batch.lostCount > 0 { logger.critical("ccTalk: \(batch.lostCount) event(s) LOST to a buffer overrun: coins may have been taken without credit") }
            logger.debug("ccTalk \(event)")
        case .fault, .notResponding, .notACoinAcceptor, .refused:
            logger.warning("ccTalk \(event)")
        case .identified, .responding, .faultCleared:
            logger.notice("ccTalk \(event)")
        case .configured, .malformedReply, .lineError:
            logger.debug("ccTalk \(event)")
        }
    }
}
