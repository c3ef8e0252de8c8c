/// The host side of the payout hoppers on a ccTalk bus, with no I/O: answers and the time go
/// in, requests to ask (through `CCTalkHost.ask`) and finished dispenses come out.
///
/// What it does:
/// - reads each hopper's serial number, coin (171), registers (163) and status (166), and again
///   every few seconds while it is idle, so a power-up or a fault shows;
/// - pays a dispense (167) only on a fresh status: the event counter read just before is the
///   mark the payout journal records with the step, so that after a crash the hopper's own
///   counter says whether the dispense was taken;
/// - never sends a dispense twice: one whose reply is lost is looked for in the counter;
/// - follows the payout in the status until nothing remains, then reads the registers and
///   reports the hopper's own account of paid and unpaid coins;
/// - sends an emergency stop (172) when a payout stops moving or the hopper stops answering
///   mid-payout, and reads what it paid once it answers again (a hopper keeps its paid and
///   unpaid counts through a power cut, and says so in register 3);
/// - enables payout (164) just before a dispense, and disables it once the payout is over;
///   resets a hopper whose flags stop payouts, but only while it is not held for a payout
///   (a reset clears the counter a payout left open is settled from).
public struct CCTalkHopperBank: Sendable {
    /// A hopper as the bank knows it.
    public struct Hopper: Sendable, Hashable {
        public var unit: CCTalkHopperUnit
        public var serialNumber: UInt32?
        /// The coin id it reports (171).
        public var reportedCoin: String?
        public var registers: CCTalkHopperRegisters?
        public var status: CCTalkHopperStatus?
        /// Requests in a row it did not answer.
        public var silentInARow = 0
        /// Its last status read failed (no reply, or not a status): its counter is not known
        /// to be current, so it is not dispensed from until it is read again.
        public var statusStale = false
        /// Times its counter moved other than by a dispense (a restart, or an exchange): each
        /// time its serial number is read again.
        public var restartsSeen = 0
        public var responding: Bool { silentInARow < Self.silentLimit }

        static let silentLimit = 3

        /// Known, and paying the configured coin.
        public var isReady: Bool {
            serialNumber != nil && registers != nil && status != nil && responding && reportedCoin.map { $0 == unit.coinID } != false
        }
    }

    /// A request for the host to send.
    public struct Ask: Sendable, Hashable {
        public var address: UInt8
        public var request: CCTalkRequest
    }

    private enum Stage: Sendable, Hashable {
        case idle
        /// The dispense is asked; its reply not in yet.
        case sending(Dispense)
        /// The dispense's reply was lost: the counter says whether it was taken.
        case verifying(Dispense, sameCounterReads: Int)
        /// Taken: paying; `remaining` as last read, and when it last moved.
        case paying(Dispense, remaining: Int, movedAt: UInt64)
        /// Nothing remains: the registers say why it stopped short, if it did.
        case finishing(Dispense, CCTalkHopperStatus)
    }

    private struct Dispense: Sendable, Hashable {
        var index: Int
        var count: Int
        var mark: UInt8
        var stopSent = false
        /// The hopper was seen taking it (an ACK, or its counter one past the mark): from then
        /// on it is never concluded "not taken", whatever its counter does later.
        var confirmed = false
        /// Coins remaining as last read while it paid: what it paid at least is the rest.
        var lastRemaining: Int?
    }

    /// A payout that does not move for this long is stopped (172).
    public static let stallTimeout: UInt64 = 10_000_000_000
    /// How often a paying hopper's status is read, and an idle one's refreshed.
    public static let payingPollInterval: UInt64 = 100_000_000
    public static let idleRefreshInterval: UInt64 = 2_000_000_000

    public private(set) var hoppers: [Hopper]
    /// Rounds of status and registers of every hopper completed (`count`): a count newer than
    /// one taken before a hold is a payout's starting point.
    public private(set) var rounds: UInt64 = 0
    /// Held for a payout: no reset, payouts enabled only for the dispense under way.
    public private(set) var held = false
    private var stage = Stage.idle
    private var finished: [CCTalkHopperPayment] = []
    /// Finished dispenses held back until a fresh round has read every hopper: the next step,
    /// on whichever hopper, is journalled with a counter read after this one ended.
    private var finishedWaiting: [CCTalkHopperPayment] = []
    /// Replies still to come, per hopper (a request is not asked again while one waits).
    private var waiting: [Int: Set<CCTalkHeader>] = [:]
    /// Hoppers still to answer in the round under way.
    private var roundLeft: Set<Int>?
    private var nextRefreshAt: UInt64 = 0
    private var nextPayingPollAt: UInt64 = 0

    public init(units: [CCTalkHopperUnit]) {
        hoppers = units.map { Hopper(unit: $0) }
    }

    /// The addresses it talks to.
    public var addresses: Set<UInt8> { Set(hoppers.map(\.unit.address)) }

    /// Nothing paying: no dispense under way, no finished one waiting for its round, and no
    /// hopper that answers says it is still paying. A hopper that does not answer, or pays
    /// another coin, does not hold the others up: it cannot pay (`canPay`), so no plan uses it.
    public var isIdle: Bool {
        guard case .idle = stage, finishedWaiting.isEmpty else { return false }
        return hoppers.allSatisfy { !$0.isReady || $0.status?.remaining == 0 }
    }

    /// Who the hoppers are, as the payout journal records it: each one's address, serial number
    /// (`?` while unread) and coin. A payout left open is settled from the counters of the
    /// hopper that paid its last step, and only if that hopper's serial number is the one
    /// recorded (`sameHopper`): one hopper unread or exchanged says nothing about another.
    public var identity: String? {
        guard !hoppers.isEmpty else { return nil }
        return "hoppers " + hoppers.map { "\($0.unit.address):\($0.serialNumber.map(String.init) ?? "?"):\($0.unit.coinID)" }.joined(separator: ",")
    }

    /// Who unit `index` is, as a step it pays is journalled with: its address, serial number and
    /// coin; nil while its serial number is not read.
    public func unitIdentity(_ index: Int) -> String? {
        guard hoppers.indices.contains(index), let serial = hoppers[index].serialNumber else { return nil }
        let unit = hoppers[index].unit
        return "\(unit.address):\(serial):\(unit.coinID)"
    }

    /// Whether unit `index` is the hopper a journalled `identity` names in its place.
    public enum SameHopper: Sendable, Hashable {
        case same
        /// Its serial number is not read yet: the settlement waits for it.
        case unread
        /// Another hopper, or the unit configured otherwise: what differs.
        case other(String)
        /// The record names no hoppers: journalled by an older build, which named none until
        /// every serial number was read, and is believed as it was then.
        case unrecorded
    }

    /// The journal lists the hoppers in the units' order: the entry in `index`'s place must be
    /// this unit (its address and coin, so a reordered configuration is not taken for the same
    /// hoppers) with this hopper's serial number. An entry whose serial number was not read then
    /// cannot vouch for the hopper, which may have been read and paid later in the payout.
    /// `step`: the identity the step itself was journalled with (`unitIdentity`), which names
    /// the hopper that was to pay it even when another was put in its place earlier in the
    /// payout; older journals name only the payout's.
    public func sameHopper(_ index: Int, as recorded: String?, step: String? = nil) -> SameHopper {
        guard hoppers.indices.contains(index) else { return .unrecorded }
        let entry: (address: UInt8, serialNumber: UInt32?, coinID: String)?
        if let step {
            entry = Self.entry(step[...])
        } else {
            guard let entries = Self.entries(recorded) else { return .unrecorded }
            entry = entries.indices.contains(index) ? entries[index] : nil
        }
        let unit = hoppers[index].unit
        guard let entry, entry.address == unit.address, entry.coinID == unit.coinID else {
            let was = entry.map { "address \($0.address) paying \($0.coinID)" } ?? "not configured"
            return .other("unit \(index) was \(was) when the payout was journalled, and is address \(unit.address) paying \(unit.coinID) now")
        }
        guard let was = entry.serialNumber else { return .other("its serial number was not read when the payout was journalled") }
        guard let now = hoppers[index].serialNumber else { return .unread }
        return now == was ? .same : .other("it is another hopper than the one that paid (serial number \(was) then, \(now) now)")
    }

    /// The hoppers an `identity` names, in the units' order; nil if it names none.
    static func entries(_ identity: String?) -> [(address: UInt8, serialNumber: UInt32?, coinID: String)]? {
        guard let identity, identity.hasPrefix("hoppers ") else { return nil }
        var entries: [(address: UInt8, serialNumber: UInt32?, coinID: String)] = []
        for part in identity.dropFirst("hoppers ".count).split(separator: ",") {
            guard let entry = entry(part) else { return nil }
            entries.append(entry)
        }
        return entries
    }

    /// One hopper as an identity names it: `address:serial:coin` (`?` for a serial not read).
    static func entry(_ text: Substring) -> (address: UInt8, serialNumber: UInt32?, coinID: String)? {
        let fields = text.split(separator: ":", maxSplits: 2)
        guard fields.count == 3, let address = UInt8(fields[0]) else { return nil }
        return (address, UInt32(fields[1]), String(fields[2]))
    }

    /// Whether hopper `index` can take a dispense when it is idle: known, paying the configured
    /// coin, answering, and no flag that stops payouts until a reset.
    public func canPay(_ index: Int) -> Bool {
        guard hoppers.indices.contains(index) else { return false }
        let hopper = hoppers[index]
        return hopper.isReady && !hopper.statusStale && hopper.registers?.needsReset != true && hopper.registers?.encryptionEnabled != true
            && !(hopper.unit.serialDispense && hopper.serialNumber == nil)
    }

    /// The event counter a step on hopper `index` is journalled with: the one last read.
    public func mark(_ index: Int) -> UInt8? { hoppers.indices.contains(index) ? hoppers[index].status?.eventCounter : nil }

    /// Reads every hopper first.
    public mutating func start(now: UInt64) -> [Ask] {
        nextRefreshAt = now &+ Self.idleRefreshInterval
        var asks: [Ask] = []
        for index in hoppers.indices {
            asks += ask(index, [.serialNumber, .hopperCoin, .testHopper, .hopperStatus])
        }
        return asks
    }

    /// Time passed: the paying hopper's status, idle refreshes, a stalled payout stopped.
    public mutating func tick(now: UInt64) -> [Ask] {
        var asks: [Ask] = []
        switch stage {
        case .paying(var dispense, _, let movedAt) where now &- movedAt > Self.stallTimeout && !dispense.stopSent:
            dispense.stopSent = true
            if case .paying(_, let remaining, let moved) = stage { stage = .paying(dispense, remaining: remaining, movedAt: moved) }
            asks += ask(dispense.index, [.emergencyStop])
            fallthrough
        case .paying, .verifying:
            if now >= nextPayingPollAt, let index = payingIndex {
                nextPayingPollAt = now &+ Self.payingPollInterval
                asks += ask(index, [.hopperStatus])
            }
        case .finishing(let dispense, _):
            // The registers' answer was lost or refused: ask again.
            if now >= nextPayingPollAt {
                nextPayingPollAt = now &+ Self.payingPollInterval
                asks += ask(dispense.index, [.testHopper])
            }
        case .idle, .sending:
            break
        }
        if now >= nextRefreshAt, case .idle = stage {
            nextRefreshAt = now &+ Self.idleRefreshInterval
            for index in hoppers.indices {
                let hopper = hoppers[index]
                var requests: [CCTalkRequest] = [.testHopper, .hopperStatus]
                if hopper.serialNumber == nil { requests.insert(.serialNumber, at: 0) }
                if hopper.reportedCoin == nil { requests.insert(.hopperCoin, at: 0) }
                asks += ask(index, requests)
                if !held, hopper.registers?.needsReset == true { asks += ask(index, [.reset]) }
            }
        }
        return asks
    }

    /// When `tick` next has something to do.
    public var nextWake: UInt64 {
        switch stage {
        case .paying, .verifying, .finishing: min(nextPayingPollAt, nextRefreshAt)
        default: nextRefreshAt
        }
    }

    /// A fresh status and registers of every hopper; `rounds` moves once all have answered.
    public mutating func count() -> [Ask] {
        roundLeft = Set(hoppers.indices)
        return hoppers.indices.flatMap { ask($0, [.testHopper, .hopperStatus]) }
    }

    /// Held for a payout (dispenses allowed only through `dispense`), or let go: payouts
    /// disabled again.
    public mutating func hold(_ on: Bool) -> [Ask] {
        held = on
        guard !on else { return [] }
        return hoppers.indices.flatMap { ask($0, [.enableHopper(false)]) }
    }

    /// Pays `count` coins from hopper `index`; nil if it cannot now (not idle and ready, or a
    /// flag stops payouts). The mark is the counter last read: the caller journals it first.
    public mutating func dispense(_ index: Int, count: Int) -> [Ask]? {
        guard case .idle = stage, hoppers.indices.contains(index), (1...255).contains(count) else { return nil }
        let hopper = hoppers[index]
        guard canPay(index), finishedWaiting.isEmpty, let status = hopper.status, status.remaining == 0 else { return nil }
        stage = .sending(Dispense(index: index, count: count, mark: status.eventCounter))
        let serial = hopper.unit.serialDispense ? hopper.serialNumber : nil
        return ask(index, [.enableHopper(true), .dispenseHopperCoins(count: UInt8(count), serialNumber: serial)])
    }

    /// Dispenses that are over, oldest first.
    public mutating func takeFinished() -> [CCTalkHopperPayment] {
        defer { finished.removeAll() }
        return finished
    }

    /// What a hopper answered (nil: nothing after every attempt).
    public mutating func answered(_ address: UInt8, _ request: CCTalkRequest, _ answer: CCTalkAnswer?, now: UInt64) -> [Ask] {
        guard let index = hoppers.firstIndex(where: { $0.unit.address == address }) else { return [] }
        waiting[index]?.remove(request.header)
        guard let answer else {
            hoppers[index].silentInARow += 1
            return silent(index, request, now: now)
        }
        hoppers[index].silentInARow = 0
        switch (request, answer) {
        case (.serialNumber, .reply(.serialNumber(let number))):
            hoppers[index].serialNumber = number
        case (.hopperCoin, .reply(.coinID(let id))):
            hoppers[index].reportedCoin = id.text
        case (.testHopper, .reply(.hopperRegisters(let registers))):
            hoppers[index].registers = registers
            return registersRead(index, registers, now: now)
        case (.hopperStatus, .reply(.hopperStatus(let status))):
            let before = hoppers[index].status
            hoppers[index].status = status
            hoppers[index].statusStale = false
            // A counter that moved other than by a dispense of ours: the hopper restarted, or
            // another one was put at its address. Who it is is read again before it pays.
            var asks: [Ask] = []
            if let before, status.eventCounter != before.eventCounter, status.eventCounter != CCTalkHopperStatus.counter(before.eventCounter, after: 1) {
                hoppers[index].serialNumber = nil
                hoppers[index].reportedCoin = nil
                hoppers[index].restartsSeen += 1
                asks = ask(index, [.serialNumber, .hopperCoin])
            }
            return asks + statusRead(index, status, now: now)
        case (.dispenseHopperCoins, .reply(.dispenseTaken)):
            if case .sending(var dispense) = stage, dispense.index == index {
                dispense.confirmed = true
                stage = .paying(dispense, remaining: dispense.count, movedAt: now)
                nextPayingPollAt = now &+ Self.payingPollInterval
            }
        case (.dispenseHopperCoins, _):
            // Refused (NAK, BUSY past the limit, or a reply it cannot be): not taken, but make
            // sure from the counter.
            if case .sending(let dispense) = stage, dispense.index == index {
                stage = .verifying(dispense, sameCounterReads: 0)
                return ask(index, [.hopperStatus])
            }
        case (.emergencyStop, _), (.enableHopper, _), (.reset, _):
            if request == .reset { hoppers[index].status = nil; hoppers[index].registers = nil }
            return request == .reset ? ask(index, [.testHopper, .hopperStatus]) : []
        case (.hopperStatus, _):
            // Refused, or not a status: its counter is not known to be current.
            hoppers[index].statusStale = true
            finishRound(index)
        default:
            break
        }
        return []
    }

    // MARK: What the answers mean

    private var payingIndex: Int? {
        switch stage {
        case .sending(let d), .verifying(let d, _), .paying(let d, _, _), .finishing(let d, _): d.index
        case .idle: nil
        }
    }

    private mutating func silent(_ index: Int, _ request: CCTalkRequest, now: UInt64) -> [Ask] {
        switch (stage, request) {
        case (.sending(let dispense), .dispenseHopperCoins) where dispense.index == index:
            // Lost: taken or not, the counter will say. Never sent again.
            stage = .verifying(dispense, sameCounterReads: 0)
            return ask(index, [.hopperStatus])
        case (.paying(var dispense, let remaining, let movedAt), .hopperStatus) where dispense.index == index && !dispense.stopSent
            && hoppers[index].silentInARow >= Hopper.silentLimit:
            // It stopped answering mid-payout (power lost, line cut): stop it if it can hear.
            dispense.stopSent = true
            stage = .paying(dispense, remaining: remaining, movedAt: movedAt)
            return ask(index, [.emergencyStop])
        default:
            // A hopper that does not answer cannot pay: the round goes on without it.
            if request == .hopperStatus {
                hoppers[index].statusStale = true
                finishRound(index)
            }
            return []
        }
    }

    private mutating func statusRead(_ index: Int, _ status: CCTalkHopperStatus, now: UInt64) -> [Ask] {
        defer { finishRound(index) }
        switch stage {
        case .verifying(let dispense, let reads) where dispense.index == index:
            if status.eventCounter == CCTalkHopperStatus.counter(dispense.mark, after: 1) {
                var taken = dispense
                taken.confirmed = true
                stage = .paying(taken, remaining: Int(status.remaining), movedAt: now)
                return statusRead(index, status, now: now)
            }
            if status.eventCounter == dispense.mark, reads < 1 {
                // The dispense may still be on its way: read once more.
                stage = .verifying(dispense, sameCounterReads: reads + 1)
                return ask(index, [.hopperStatus])
            }
            // Not moved after two reads, or moved elsewhere: the registers say which (power cut
            // during it, not taken, or a restart that leaves it unknown).
            stage = .finishing(dispense, status)
            return ask(index, [.testHopper])
        case .paying(var dispense, let remaining, let movedAt) where dispense.index == index:
            let ours = status.eventCounter == CCTalkHopperStatus.counter(dispense.mark, after: 1)
            if ours {
                dispense.confirmed = true
                dispense.lastRemaining = Int(status.remaining)
            }
            guard ours else {
                // The counter went back: the hopper restarted mid-payout (a power cut).
                stage = .finishing(dispense, status)
                return ask(index, [.testHopper])
            }
            if status.remaining == 0 {
                stage = .finishing(dispense, status)
                return ask(index, [.testHopper])
            }
            let moved = Int(status.remaining) != remaining
            stage = .paying(dispense, remaining: Int(status.remaining), movedAt: moved ? now : movedAt)
        default:
            break
        }
        return []
    }

    private mutating func registersRead(_ index: Int, _ registers: CCTalkHopperRegisters, now: UInt64) -> [Ask] {
        guard case .finishing(let dispense, let status) = stage, dispense.index == index else { return [] }
        let paid = Int(status.lastPaid), unpaid = Int(status.lastUnpaid)
        // A hopper whose memory of paid and unpaid coins may be wrong says so: not believed.
        let trusted = !registers.memoryChecksumError
        if status.eventCounter == CCTalkHopperStatus.counter(dispense.mark, after: 1) {
            let adds = paid + unpaid == dispense.count && trusted
            let why: String? = unpaid == 0 ? nil
                : registers.jammed ? "jammed (\(registers))" : registers.payoutTimeout ? "empty (\(registers))"
                : dispense.stopSent ? "stopped: it did not move for \(Self.stallTimeout / 1_000_000_000) s or stopped answering" : "stopped short (\(registers))"
            return finish(dispense, taken: true, paid: paid, unpaid: unpaid, certain: adds,
                          why: adds ? why : "its account cannot be believed: \(paid) paid and \(unpaid) unpaid of \(dispense.count) (\(registers))")
        }
        // The flag first: a hopper with it set refuses every dispense, so it was set during
        // this one, whatever the mark (a first dispense after a power-up has mark 0 too).
        if registers.powerDownDuringPayout, status.eventCounter == 0 {
            // It kept its counts through the power cut: they are this payout's.
            return finish(dispense, taken: true, paid: paid, unpaid: unpaid, certain: trusted && paid + unpaid == dispense.count,
                          why: "power lost during the payout")
        }
        // Seen taking it, then back at another counter without the flag: it restarted after
        // paying some or all. What it paid at least is what it had paid when last read.
        if dispense.confirmed {
            let atLeast = dispense.lastRemaining.map { max(dispense.count - $0, 0) } ?? 0
            return finish(dispense, taken: true, paid: atLeast, unpaid: dispense.count - atLeast, certain: false,
                          why: "the hopper restarted after taking the dispense (event counter \(status.eventCounter)): it paid at least \(atLeast) of \(dispense.count), the rest cannot be told")
        }
        if status.eventCounter == dispense.mark {
            return finish(dispense, taken: false, paid: 0, unpaid: 0, certain: true, why: "the hopper did not take the dispense")
        }
        return finish(dispense, taken: false, paid: 0, unpaid: dispense.count, certain: false,
                      why: "the hopper restarted (event counter \(status.eventCounter), the dispense was sent at \(dispense.mark)): whether it paid cannot be told")
    }

    private mutating func finish(_ dispense: Dispense, taken: Bool, paid: Int, unpaid: Int, certain: Bool, why: String?) -> [Ask] {
        stage = .idle
        finishedWaiting.append(CCTalkHopperPayment(unit: dispense.index, count: dispense.count, taken: taken, paid: paid, unpaid: unpaid,
                                                   certain: certain, why: why))
        return ask(dispense.index, [.enableHopper(false)]) + count()
    }

    /// A round ends with every hopper's status (asked after its registers, on a line that
    /// answers in order).
    private mutating func finishRound(_ index: Int) {
        guard var left = roundLeft else { return }
        left.remove(index)
        roundLeft = left
        if left.isEmpty {
            roundLeft = nil
            rounds += 1
            finished += finishedWaiting
            finishedWaiting = []
        }
    }

    /// The requests for hopper `index` not already waiting for a reply.
    private mutating func ask(_ index: Int, _ requests: [CCTalkRequest]) -> [Ask] {
        var asks: [Ask] = []
        for request in requests {
            let read = [.serialNumber, .hopperCoin, .testHopper, .hopperStatus].contains(request)
            if read, waiting[index]?.contains(request.header) == true { continue }
            waiting[index, default: []].insert(request.header)
            asks.append(Ask(address: hoppers[index].unit.address, request: request))
        }
        return asks
    }
}
