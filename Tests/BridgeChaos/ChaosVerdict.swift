import CoinMechProtocol

/// What the run did and what the consumer's store holds against the ledger.
struct ChaosVerdict {
    var seed: UInt64 = 0
    var bridgeKills = 0
    var brokerKills = 0
    var brokerDownSeconds = 0.0
    var daemonRestarts = 0
    var sessionsCleared = 0
    var subscriberKills = 0
    /// The ledger's events at the end.
    var events = 0
    /// Messages the consumer received on `event`, copies included.
    var copies = 0
    /// Copies beyond the first of each seq: the resends the faults caused. 0 after faults means
    /// the faults did nothing, and the run proves nothing.
    var resent = 0
    /// Ledger seqs the consumer never stored.
    var lost = 0
    /// Copies of a stored seq that differ from it in kind or time: another event under the
    /// same identity, which dedupe by (cabinet, seq) would have dropped as a duplicate.
    var duplicatedAfterDedupe = 0
    /// Within one subscriber connection to one broker incarnation, a seq above every seq before it that skips seqs the
    /// store does not hold: the stream left a hole (the bridge publishes in order, a rewind goes
    /// back, never ahead over what the consumer lacks).
    var outOfOrder = 0
    /// Stored seqs the ledger does not have.
    var phantom = 0

    var isClean: Bool {
        lost == 0 && duplicatedAfterDedupe == 0 && outOfOrder == 0 && phantom == 0 && events > 0 && (resent > 0 || bridgeKills + brokerKills == 0)
    }

    var json: String {
        let object: JSON = [
            "seed": .int(Int64(seed)), "bridge_kills": .int(Int64(bridgeKills)), "broker_kills": .int(Int64(brokerKills)),
            "broker_down_s": .double(brokerDownSeconds), "daemon_restarts": .int(Int64(daemonRestarts)),
            "sessions_cleared": .int(Int64(sessionsCleared)), "subscriber_kills": .int(Int64(subscriberKills)),
            "events": .int(Int64(events)), "copies": .int(Int64(copies)), "resent": .int(Int64(resent)), "lost": .int(Int64(lost)),
            "duplicated_after_dedupe": .int(Int64(duplicatedAfterDedupe)), "out_of_order": .int(Int64(outOfOrder)), "phantom": .int(Int64(phantom)),
        ]
        return object.description
    }
}
