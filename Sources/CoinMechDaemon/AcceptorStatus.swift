import CoinMechCCTalk
import CoinMechCore
import CoinMechMDB
import CoinMechSources
import CoinMechProtocol

/// What `status` shows of a mech that takes coins itself (a ccTalk acceptor, an MDB changer):
/// who it is, whether it takes coins, its counter, and what its events came to. Lost events
/// and lost replies are raised loudly: coins may have been taken without credit.
public struct AcceptorStatus: Sendable {
    /// An MDB changer's own part: its coins by type, its tubes, what it takes now.
    public var changer: Changer?
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
    /// Payout hoppers on a ccTalk bus: each with its level by the ledger and its own state.
    public var hoppers: [Hopper]?
    public var hopperCurrency: String?
    public var hoppersHeld = false

    public struct Hopper: Sendable {
        public var unit: Int
        public var device: CCTalkHopperBank.Hopper
        public var level: Int
        /// It could take a dispense now (no fault waiting for a reset, answering).
        public var canPay: Bool
    }

    init(engine: CCTalkHost, core: AcceptorCore, mech: CCTalkMech? = nil) {
        if let mech, let bank = mech.bank {
            hoppers = bank.hoppers.enumerated().map { Hopper(unit: $0.offset, device: $0.element, level: mech.levels[$0.offset], canPay: bank.canPay($0.offset)) }
            hopperCurrency = mech.payoutCurrency
            hoppersHeld = bank.held
        }
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

    public struct Changer: Sendable {
        /// Coin type → its coin id (`USD25`) and value, for the types with a value.
        public var coins: [Int: String]
        public var values: [Int: Int64]
        /// The ISO 4217 letters of its currency, where the daemon knows them.
        public var currency: String?
        public var tubes: [Int]
        /// The coin types it takes now (COIN TYPE, as it acknowledged it); nil when unknown.
        public var accepting: UInt16?
        public var identity: MDBChangerIdentity?
        public var level: UInt8?
        /// The number of the last coin it reported.
        public var lastCoin: UInt64
        /// Held at COIN TYPE 0 for a payout under way, or one left open by a daemon before
        /// this one (settled once the changer is set up).
        public var heldForPayout: Bool
    }

    init(changer mech: MDBMech, core: AcceptorCore) {
        let engine = mech.engine
        let coins = engine.setup?.coinIDs ?? [:]
        let values = coins.keys.reduce(into: [Int: Int64]()) { values, type in values[type] = engine.setup?.valueMinor(ofType: type) }
        changer = Changer(coins: coins, values: values, currency: engine.setup?.currencyCode, tubes: mech.tubes.map(Int.init),
                          accepting: engine.accepting, identity: engine.identity, level: engine.setup?.level, lastCoin: mech.lastCoin,
                          heldForPayout: mech.isHeldForPayout)
        responding = engine.isResponding
        accepting = engine.accepting.map { $0 != 0 }
        fault = CCTalkFaultCode(code: 0)
        heldForLedger = mech.isHeldForLedger
        statistics = CCTalkHostStatistics()
        counts = core.counts
        ledgerFailure = core.ledgerFailure
    }

    /// `lostSinceCollect`: the ledger's count of lost events since the cash box was last emptied.
    func json(lostSinceCollect: Int?) -> JSON {
        if let changer { return changerJSON(changer) }
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
        if let hoppers {
            object["held_for_payout"] = .bool(hoppersHeld)
            object["hoppers"] = .array(hoppers.map(Self.hopperJSON))
        }
        return .object(object)
    }

    private static func hopperJSON(_ hopper: Hopper) -> JSON {
        let device = hopper.device
        var object: [String: JSON] = [
            "unit": .int(Int64(hopper.unit)), "address": .int(Int64(device.unit.address)), "coin_id": .string(device.unit.coinID),
            "value_minor": .int(device.unit.valueMinor), "level": .int(Int64(hopper.level)), "responding": .bool(device.responding),
            "can_pay": .bool(hopper.canPay),
            "flags": .string(device.registers?.description ?? "not read"),
        ]
        if let serial = device.serialNumber { object["serial_number"] = .int(Int64(serial)) }
        if let reported = device.reportedCoin, reported != device.unit.coinID {
            object["alarm"] = .string("it reports coin \(reported), not the configured \(device.unit.coinID): it pays nothing until the configuration or the hopper is put right")
        }
        if let status = device.status {
            object["event_counter"] = .int(Int64(status.eventCounter))
            object["paying"] = .int(Int64(status.remaining))
            object["last_paid"] = .int(Int64(status.lastPaid))
            object["last_unpaid"] = .int(Int64(status.lastUnpaid))
        }
        return .object(object)
    }

    private func changerJSON(_ changer: Changer) -> JSON {
        var object: [String: JSON] = [
            "kind": "mdb",
            "responding": .bool(responding),
            "held_for_ledger": .bool(heldForLedger),
            "held_for_payout": .bool(changer.heldForPayout),
            "credited": .int(Int64(counts.credited)), "uncredited": .int(Int64(counts.uncredited)),
            "lost_replies": .int(Int64(counts.lostReplies)), "duplicates": .int(Int64(counts.duplicates)),
            "event_number": .int(Int64(bitPattern: changer.lastCoin)),
            "coins": .object(Dictionary(uniqueKeysWithValues: changer.coins.map { ("\($0.key)", JSON.string($0.value)) })),
            "tubes": .object(Dictionary(uniqueKeysWithValues: changer.coins.map { ($0.value, JSON.int(Int64(changer.tubes[$0.key]))) })),
        ]
        if let accepting = changer.accepting {
            object["accepting"] = .bool(accepting != 0)
            object["accepting_coins"] = .array(changer.coins.keys.sorted().filter { accepting & (1 << $0) != 0 }.map { .string(changer.coins[$0]!) })
        }
        if let level = changer.level { object["level"] = .int(Int64(level)) }
        if let identity = changer.identity {
            object["manufacturer"] = .string(identity.manufacturer)
            object["product"] = .string(identity.model)
            object["serial_number"] = .string(identity.serialNumber)
        }
        if counts.lostReplies > 0 {
            object["alarm"] = .string("\(counts.lostReplies) POLL repl\(counts.lostReplies == 1 ? "y" : "ies") LOST: coins may have been kept without credit; the tube counts show those sent to a tube")
        }
        if let ledgerFailure { object["ledger_failure"] = .string(ledgerFailure) }
        return .object(object)
    }
}
