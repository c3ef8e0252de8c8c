import CoinMechCore
import CoinMechModel
import CoinSimCore

/// Runs a `PayoutCore` the way the daemon's executor does, against a paying device on simulated
/// time (`RigDevice`: coinsim's changer or hoppers behind their host engines) and a ledger in
/// memory with the real one's rules (`FakePayoutLedger`), as `CoreRig` runs the deciding core.
///
/// One seed is one session of random interleavings: an asker pays out amounts under request
/// ids, asking again with the same id whenever it heard nothing or `open`, and now and then
/// repeating a settled one; an operator refills hoppers; commits land and report a failure, or
/// fail; the ledger cannot be read back; the daemon is killed after any output and started
/// again later while the device goes on; the line loses replies. Then the faults stop, time
/// passes until nothing is open, and the truth is joined with the ledger:
/// - **paid twice**: coins that left a unit beyond what the journalled steps asked of it;
/// - **unpaid or unrecorded**: coins that left a unit differ from what settlements say it paid;
/// - **open**: a payout never settled;
/// - **inventory**: a hopper's level on the ledger differs from the coins in it;
/// - **answers**: a request id answered two ways, or a settlement whose paid and owed do not
///   make its amount.
struct PayoutRig<Device: RigDevice> {
    var random: SplitMix64
    var device: Device
    var ledger: FakePayoutLedger
    var core: PayoutCore?
    var faults: PayoutRigFaults
    var now: UInt64 = 1_000_000_000
    var reviveAt: UInt64?
    let capabilities: PayoutCapabilities
    /// The asker: the request in hand (asked again until it has an answer), and every
    /// settlement it heard, by request id.
    private var asking: (id: String, amount: Int64)?
    private var waitingFor: Ticket?
    private var heard: [String: PayoutSettlement] = [:]
    private var nextID = 0
    private var nextTicket: UInt64 = 0
    /// An operator's refill not yet answered: the coins are in the hopper, the ledger must hear.
    private var refilling: (id: String, unit: Int, coins: Int, ticket: Ticket?)?
    private(set) var problems: [String] = []
    private(set) var kills = 0
    private(set) var payouts = 0
    /// Value steps sent (a changer that pays values itself).
    private(set) var valueSteps = 0
    /// Commits that landed and reported a failure, and ledger reads that failed.
    private(set) var landedReportedFailed = 0
    private(set) var readsFailed = 0
    /// Set when a loop passed its bound (`RigBounds`): the session ends there and fails.
    private(set) var halted = false
    private var stepsThisTurn = 0
    /// Every input, output, kill and coin paid, when `tracing` (PAYOUT_RIG_TRACE=1 with
    /// `repeatSeed`): what a failing seed did.
    var tracing = false
    private(set) var trace: [String] = []
    private var paidSeen: [Int: Int] = [:]
    /// Every step sent, in order, with the coins that left the device while it was the last one
    /// sent (the core sends the next only once the last is counted, so the coins that leave in
    /// between are that step's): the judge holds each to what it asked.
    private var sent: [(asked: SentStep, paid: [Int: Int])] = []
    private var attributed: [Int: Int] = [:]
    private enum SentStep { case dispense(type: Int, count: Int), value(Int64) }
    private var faultsSeen: [String: Int] = [:]

    init(seed: UInt64, capabilities: PayoutCapabilities, faults: PayoutRigFaults = PayoutRigFaults(), makeDevice: (inout SplitMix64) -> Device) {
        random = SplitMix64(seed: seed)
        device = makeDevice(&random)
        self.capabilities = capabilities
        self.faults = faults
        ledger = FakePayoutLedger(source: "rig")
        if capabilities.contains(.ledgerKeepsLevels) {
            // The operator's count of the hoppers as loaded, before the first daemon.
            let coins = device.state.coins ?? PayoutCoins(currency: "EUR", coins: [:])
            for (unit, level) in device.holding.enumerated() {
                _ = try? ledger.append([.inventory(InventoryChange(source: "rig", unit: unit, coinID: coins.coins[unit]?.coinID, valueMinor: coins.coins[unit]?.valueMinor ?? 1,
                                                                   kind: .set(level: level, by: "rig", requestID: "float-\(unit)")))])
            }
        }
        start()
    }

    private mutating func start() {
        if tracing { note("START, ledger open \(ledger.open.map(\.order.requestID))") }
        let core = PayoutCore(settings: PayoutCore.Settings(source: "rig", capabilities: capabilities), open: ledger.open, levels: ledger.levels, logger: .discarding)
        device.restartHost(now: now, random: &random)
        let outputs = core.start()
        self.core = core
        carry(outputs)
        waitingFor = nil
        if let refill = refilling { refilling = (refill.id, refill.unit, refill.coins, nil) }
    }

    /// One session: `turns` of random interleavings, then calm until nothing is open.
    mutating func run(turns: Int = 120) {
        for _ in 0..<turns where !halted { turn(asking: true) }
        faults = .none
        device.calm()
        for _ in 0..<2_000 where !halted {
            turn(asking: false)
            if core != nil, ledger.open.isEmpty, core?.isPaying == false, asking == nil, refilling == nil { break }
        }
        // Long enough for every hopper and changer to be idle and counted.
        for _ in 0..<20 where !halted { turn(asking: false) }
        guard !halted else { return }
        judge()
    }

    /// Ends the session as failed: a loop passed its bound.
    private mutating func halt(_ why: String) {
        guard !halted else { return }
        halted = true
        problems.append("HANG: \(why)")
    }

    private mutating func turn(asking ask: Bool) {
        now += UInt64.random(in: 20...150, using: &random) * 1_000_000
        stepsThisTurn = 0
        device.advance(to: now, hostAlive: core != nil, random: &random)
        if let stuck = device.stuck { return halt(stuck) }
        if tracing, device.paidByUnit != paidSeen {
            paidSeen = device.paidByUnit
            note("device paid so far \(paidSeen.sorted { $0.key < $1.key }), holds \(device.holding)")
        }
        if tracing, device.faults != faultsSeen {
            faultsSeen = device.faults
            note("device faults so far \(faultsSeen.sorted { $0.key < $1.key })")
        }
        guard core != nil else {
            if let reviveAt, now >= reviveAt {
                self.reviveAt = nil
                start()
            }
            return
        }
        step(.device(device.state, dispensed: device.takeDispensed()))
        guard core != nil else { return }
        if waitingFor == nil {
            if asking == nil, ask, Double.random(in: 0..<1, using: &random) < 0.3 {
                nextID += 1
                asking = ("pay-\(nextID)", device.amounts.randomElement(using: &random)!)
            } else if asking == nil, ask, let repeated = heard.keys.sorted().randomElement(using: &random), Double.random(in: 0..<1, using: &random) < 0.05 {
                // A repeat of a settled request: answered from the ledger, nothing paid.
                asking = (repeated, ledger.payouts[repeated]?.order.amountMinor ?? 0)
            }
            if let asking, Double.random(in: 0..<1, using: &random) < 0.5 {
                nextTicket += 1
                waitingFor = Ticket(nextTicket)
                payouts += 1
                step(.payout(PayoutRequest(requestID: asking.id, amountMinor: asking.amount, currency: nil, by: "rig"), ticket: Ticket(nextTicket)))
                guard core != nil else { return }
            }
        }
        if capabilities.contains(.ledgerKeepsLevels) { operatorRefill(ask) }
    }

    /// An operator loads coins into a hopper and records it; a refill not answered is asked
    /// again with its id.
    private mutating func operatorRefill(_ ask: Bool) {
        if refilling == nil, ask, core?.isPaying == false, Double.random(in: 0..<1, using: &random) < 0.02 {
            let unit = Int.random(in: 0..<device.holding.count, using: &random)
            let coins = Int.random(in: 1...10, using: &random)
            nextID += 1
            refilling = ("load-\(nextID)", unit, coins, nil)
            device.load(unit: unit, coins: coins)
        }
        guard let refill = refilling, refill.ticket == nil, core?.isPaying == false else { return }
        nextTicket += 1
        refilling?.ticket = Ticket(nextTicket)
        step(.inventory(InventoryRequest(unit: "\(refill.unit)", kind: .refill(coins: refill.coins), requestID: refill.id, by: "rig"), ticket: Ticket(nextTicket)))
    }

    // MARK: The executor

    /// An input from outside the executor (the device, an asker, an operator): its outputs, and
    /// the outcomes they lead to, carried out before anything else happens.
    private mutating func step(_ input: PayoutInput) {
        carry(feed(input))
    }

    /// One input into the core; its outputs, to carry out before any left from earlier.
    private mutating func feed(_ input: PayoutInput) -> [PayoutOutput] {
        guard !halted, var core else { return [] }
        stepsThisTurn += 1
        guard stepsThisTurn <= RigBounds.stepsPerTurn else {
            halt("the core and the executor went on past \(RigBounds.stepsPerTurn) steps in one turn (at \(now) ns, last input \(input))")
            return []
        }
        let outputs = core.step(input, at: Instant(nanoseconds: now))
        self.core = core
        if tracing {
            note("in  \(input)")
            for output in outputs { note("  out \(output)") }
        }
        return outputs
    }

    /// A step goes out: the coins that left since the last one was sent are that one's.
    private mutating func send(_ step: SentStep) {
        attribute()
        sent.append((step, [:]))
    }

    private mutating func attribute() {
        for (unit, paid) in device.paidByUnit where paid != attributed[unit, default: 0] {
            let new = paid - attributed[unit, default: 0]
            attributed[unit] = paid
            if sent.isEmpty { sent.append((.dispense(type: -1, count: 0), [:])) }  // nothing asked yet
            sent[sent.count - 1].paid[unit, default: 0] += new
        }
    }

    private mutating func note(_ line: String) {
        trace.append("\(now / 1_000_000) ms: \(line)")
    }

    /// Carries out outputs in order; an outcome is stepped back in at once and its outputs go
    /// first (a queue, not recursion, so a long chain of failures cannot overflow the stack).
    private mutating func carry(_ outputs: [PayoutOutput]) {
        var pending = outputs
        while !pending.isEmpty {
            let output = pending.removeFirst()
            guard core != nil, !halted else { return }
            if Double.random(in: 0..<1, using: &random) < faults.kill {
                // Killed here: nothing after this output is carried out; the device goes on.
                core = nil
                kills += 1
                if tracing { note("KILLED before \(output)") }
                reviveAt = now + UInt64.random(in: 50...3_000, using: &random) * 1_000_000
                return
            }
            switch output {
            case .hold(let on):
                device.hold(on, now: now, random: &random)
            case .count:
                device.count(now: now, random: &random)
            case .dispense(let type, let count):
                send(.dispense(type: type, count: count))
                pending.insert(contentsOf: feed(.dispenseSent(device.dispense(type: type, count: count, now: now, random: &random))), at: 0)
            case .payValue(let value):
                valueSteps += 1
                send(.value(value))
                pending.insert(contentsOf: feed(.dispenseSent(device.payValue(value, now: now, random: &random))), at: 0)
            case .askAccount(let record):
                pending.insert(contentsOf: feed(.account(device.account(record))), at: 0)
            case .lookUp(let requestID, let moves):
                if Double.random(in: 0..<1, using: &random) < faults.readBackFails {
                    readsFailed += 1
                    pending.insert(contentsOf: feed(.lookedUp(.failure(.read(message: "disk I/O error")))), at: 0)
                } else {
                    pending.insert(contentsOf: feed(.lookedUp(.success(ledger.lookUp(requestID: requestID, moves: moves)))), at: 0)
                }
            case .commit(let entries):
                let roll = Double.random(in: 0..<1, using: &random)
                if roll < faults.landedReportedFailed + faults.notWritten {
                    if roll < faults.landedReportedFailed, (try? ledger.append(entries)) != nil { landedReportedFailed += 1 }
                    pending.insert(contentsOf: feed(.commitFailed(.write(message: "disk I/O error"))), at: 0)
                    continue
                }
                do throws(LedgerError) {
                    pending.insert(contentsOf: feed(.committed(try ledger.append(entries))), at: 0)
                } catch {
                    pending.insert(contentsOf: feed(.commitFailed(error)), at: 0)
                }
            case .publish:
                break
            case .reply(let ticket, let answer):
                answered(ticket, answer)
            case .failpoint:
                break
            }
        }
    }

    private mutating func answered(_ ticket: Ticket, _ answer: PayoutAnswer) {
        if let refill = refilling, refill.ticket == ticket {
            switch answer {
            case .inventory: refilling = nil
            case .unavailable: refilling?.ticket = nil  // asked again
            default: problems.append("refill \(refill.id) answered \(answer)")
            }
            return
        }
        guard ticket == waitingFor, let asked = asking else { return }
        waitingFor = nil
        switch answer {
        case .payout(let record, _, _):
            guard let settlement = record.settlement else { return }  // open: asked again
            if let before = heard[asked.id], before != settlement {
                problems.append("request \(asked.id) answered \(settlement) after \(before)")
            }
            heard[asked.id] = settlement
            asking = nil
        case .refused:
            asking = nil
        case .unavailable:
            break  // asked again
        case .badRequest(let why):
            problems.append("request \(asked.id) for \(asked.amount) refused as a bad request: \(why)")
            asking = nil
        case .inventory:
            problems.append("a payout answered as an inventory change")
        }
    }

    // MARK: The truth joined with the ledger

    private mutating func judge() {
        let records = ledger.requested.compactMap { ledger.payouts[$0] }
        var recorded: [Int: Int] = [:]
        for record in records {
            guard let settlement = record.settlement else {
                problems.append("OPEN: payout \(record.order.requestID) never settled")
                continue
            }
            for (type, count) in settlement.paidCoins { recorded[type, default: 0] += count }
            if settlement.paidMinor + settlement.debtMinor != record.order.amountMinor {
                problems.append("payout \(record.order.requestID): paid \(settlement.paidMinor) and owed \(settlement.debtMinor) do not make \(record.order.amountMinor)")
            }
            if let said = heard[record.order.requestID], said != settlement {
                problems.append("payout \(record.order.requestID): the asker heard \(said), the ledger holds \(settlement)")
            }
        }
        // Each step sent held to what it asked: a DISPENSE to its count of its unit, a value
        // step to its value (a budget summed over all of them would let one step overpay where
        // another paid short).
        attribute()
        // Every step sent was journalled first: the steps sent are the journal's steps in order,
        // some left out (journalled, and the daemon died before sending them).
        var journalled = records.flatMap(\.steps).makeIterator()
        for (index, step) in sent.enumerated() {
            if case .dispense(-1, 0) = step.asked { continue }
            var found = false
            while let next = journalled.next() {
                switch step.asked {
                case .dispense(let type, let count): found = !next.paysValue && next.type == type && next.count == count
                case .value(let value): found = next.paysValue && next.valueMinor == value
                }
                if found { break }
            }
            if !found {
                problems.append("NOT JOURNALLED: step \(index + 1) sent (\(step.asked)) is not the journal's next step")
                break
            }
        }
        let values = device.unitValues
        for (index, step) in sent.enumerated() {
            switch step.asked {
            case .dispense(let type, let count):
                let beyond = step.paid.reduce(0) { $0 + ($1.key == type ? max($1.value - count, 0) : $1.value) }
                if beyond > 0 { problems.append("PAID TWICE: \(beyond) coin(s) left beyond step \(index + 1) sent (\(count) of unit \(type)): \(step.paid)") }
            case .value(let asked):
                let worth = step.paid.reduce(Int64(0)) { $0 + Int64($1.value) * (values[$1.key] ?? 0) }
                if worth > asked { problems.append("PAID TWICE: \(worth) left for step \(index + 1) sent, a value step of \(asked): \(step.paid)") }
            }
        }
        for (unit, paid) in device.paidByUnit.sorted(by: { $0.key < $1.key }) {
            if paid != recorded[unit, default: 0] { problems.append("UNPAID OR UNRECORDED: unit \(unit) paid \(paid) coins, the ledger says \(recorded[unit, default: 0])") }
        }
        if capabilities.contains(.ledgerKeepsLevels) {
            for (unit, coins) in device.holding.enumerated() where ledger.levels[unit]?.level != coins {
                problems.append("INVENTORY: unit \(unit) holds \(coins) coins, the ledger says \(ledger.levels[unit]?.level ?? 0)")
            }
        }
    }
}

/// The rig's faults, as rates.
struct PayoutRigFaults {
    /// A commit lands and reports a failure / fails, at these rates.
    var landedReportedFailed = 0.05
    var notWritten = 0.03
    var readBackFails = 0.2
    /// The daemon dies after an output at this rate.
    var kill = 0.01

    static let none = PayoutRigFaults(landedReportedFailed: 0, notWritten: 0, readBackFails: 0, kill: 0)
}
