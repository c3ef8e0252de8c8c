import CoinFacts
import CoinMechChain
import CoinMechCore
import CoinMechModel
import CoinMechPluginABI
import CoinMechPlugins
import CoinMechProtocol
import Logging

/// How the daemon asks the chain: the deciders the cores are stepped with. A reading of a mech
/// and a coin an acceptor took are each put to the current chain snapshot (`ChainHolder`),
/// whose verdict the core turns into money.
struct ChainDecider {
    let chain: ChainHolder
    /// The source's name, for the readings plugins see.
    let sourceName: String
    let logger: Logger

    /// Asks the current chain about a candidate.
    func decide(_ candidate: Candidate) -> Decided {
        let current = chain.current
        let reading = candidate.reading
        let decision = current.decide(Reading(
            deviceSeq: reading.deviceSeq, timestampNanoseconds: reading.sentAt.nanoseconds, diameterMM: reading.measurement.diameterMM,
            weightG: reading.measurement.weightG, thicknessMM: reading.measurement.thicknessMM, channel: reading.measurement.channel,
            alloy: reading.measurement.alloy.map { Reading.Alloy(lowIACS: $0.lowIACS, highIACS: $0.highIACS, permeability: $0.permeability) },
            source: sourceName))
        let verdict: DecisionRecord.Verdict
        switch decision.verdict {
        case .accept(let denomination): verdict = .accept(currency: denomination.currency, code: denomination.code, valueMinor: denomination.valueMinor)
        case .reject(let rejection):
            verdict = .reject(reason: rejection.reason, message: rejection.message)
            // At most `Chain.maximumLies` a link before it is quarantined: no flood.
            if rejection.reason == "plugin_lie" {
                logger.warning("a plugin lied: it accepted a coin this cabinet does not take; the coin is returned", metadata: [
                    "link": "\(decision.linkName)", "devseq": "\(reading.deviceSeq)", "why": "\(rejection.message)",
                ])
            }
        }
        return Decided(verdict: verdict, link: decision.linkName, chainGeneration: decision.chainGeneration, decidedAt: .now)
    }

    /// Asks the current chain about a coin the acceptor took.
    func decideCoin(_ coin: AcceptorCore.Coin) -> Decided {
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
}
