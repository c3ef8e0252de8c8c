import CoinMechCCTalk
import CoinMechCore
import CoinMechProtocol

/// What `status` shows of a ccTalk acceptor: who it is, whether it takes coins, its counter,
/// and what its events came to. Lost events are raised loudly: coins may have been taken
/// without credit.
public struct AcceptorStatus: Sendable {
    public var identity: CCTalkDeviceIdentity?
    public var responding: Bool
    /// Master inhibit as the device last confirmed it (nil: not yet).
    public var accepting: Bool?
    public var enabled: CoinPositionMask?
    public var counter: CCTalkCounterState?
    public var fault: CCTalkFaultCode
    public var heldForLedger: Bool
    public var statistics: CCTalkHostStatistics
    public var counts: AcceptorCounts
    public var ledgerFailure: String?

    init(engine: CCTalkHost, core: AcceptorCore) {
        identity = engine.identity
        responding = engine.isResponding
        accepting = engine.accepting
        enabled = engine.enabled
        counter = engine.recordedState
        fault = engine.fault
        heldForLedger = engine.waitsForLedger
        statistics = engine.statistics
        counts = core.counts
        ledgerFailure = core.ledgerFailure
    }

    /// `lostSinceCollect`: the ledger's count of lost events since the cash box was last emptied.
    func json(lostSinceCollect: Int?) -> JSON {
        let lost = max(lostSinceCollect ?? 0, counts.lostEvents)
        var object: [String: JSON] = [
            "responding": .bool(responding),
            "identified": .bool(identity != nil),
            "fault": fault.isFault ? .string(fault.description) : .null,
            "held_for_ledger": .bool(heldForLedger),
            "credited": .int(Int64(counts.credited)), "uncredited": .int(Int64(counts.uncredited)),
            "error_events": .int(Int64(counts.errorEvents)), "backlog_events": .int(Int64(counts.backlog)),
            "lost_events": .int(Int64(lost)), "restarts": .int(Int64(counts.restarts)),
            "duplicates": .int(Int64(counts.duplicates)),
            "polls": .int(Int64(statistics.polls)), "timeouts": .int(Int64(statistics.timeouts)), "retries": .int(Int64(statistics.retries)),
            "naks": .int(Int64(statistics.naks)), "busies": .int(Int64(statistics.busies)),
        ]
        if let accepting { object["accepting"] = .bool(accepting) }
        if let enabled { object["enabled_positions"] = .string(enabled.description) }
        if let counter {
            object["epoch"] = .int(Int64(bitPattern: counter.epoch))
            object["event_number"] = .int(Int64(bitPattern: counter.eventNumber))
            object["counter"] = .int(Int64(counter.counter))
        }
        if let identity {
            object["manufacturer"] = .string(identity.manufacturer ?? "")
            object["product"] = .string(identity.productCode ?? "")
            if let serial = identity.serialNumber { object["serial_number"] = .int(Int64(serial)) }
            object["coins"] = .object(Dictionary(uniqueKeysWithValues: identity.coinIDs.map { ("\($0.key)", JSON.string($0.value.text)) }))
        }
        if lost > 0 {
            object["alarm"] = .string("\(lost) event(s) LOST to buffer overruns: coins may have been taken without credit; poll faster or check the line")
        }
        if let ledgerFailure { object["ledger_failure"] = .string(ledgerFailure) }
        return .object(object)
    }
}
