import CoinMechCCTalk
import CoinMechCore
import CoinMechMDB
import CoinMechModel
import CoinMechSources
import CoinSimCore

/// A paying device for the payout rig, on simulated time: coinsim's pure model of the device
/// (the truth), the host engine the daemon runs for it, and the line between them with the
/// faults real lines make. The payout core sees it only as the daemon's mech would report it
/// (`MDBChangerPayer`, `CCTalkHopperBank+Payer`).
protocol RigDevice {
    /// What the daemon's mech would say of the device now.
    var state: PayingDeviceState { get }
    /// The currency its coins are in, and the amounts a customer is paid.
    var amounts: [Int64] { get }
    /// Coins that left each unit, by the device's own truth.
    var paidByUnit: [Int: Int] { get }
    /// Coins in each unit now, by the device's truth.
    var holding: [Int] { get }
    /// What a coin of each unit is worth, by the device's own settings.
    var unitValues: [Int: Int64] { get }
    /// Faults the line and the device played, by name.
    var faults: [String: Int] { get }
    /// Why the device stopped playing: one of its loops passed its bound (a host and a device
    /// that answer each other at one instant for ever). The rig fails the seed with it.
    var stuck: String? { get }
    /// Plays what is due by `now`; the host only while the daemon lives.
    mutating func advance(to now: UInt64, hostAlive: Bool, random: inout SplitMix64)
    mutating func takeDispensed() -> [DispenseCount]
    mutating func hold(_ on: Bool, now: UInt64, random: inout SplitMix64)
    mutating func count(now: UInt64, random: inout SplitMix64)
    mutating func dispense(type: Int, count: Int, now: UInt64, random: inout SplitMix64) -> Bool
    /// Pays a value in coins the device chooses (MDB level 3); false where it cannot.
    mutating func payValue(_ valueMinor: Int64, now: UInt64, random: inout SplitMix64) -> Bool
    func account(_ record: PayoutRecord) -> PayoutRestartAccount
    /// A new daemon: the host's state is gone, the device goes on.
    mutating func restartHost(now: UInt64, random: inout SplitMix64)
    /// No more faults from now: the session winds down.
    mutating func calm()
    /// An operator puts coins into a unit whose level the ledger keeps.
    mutating func load(unit: Int, coins: Int)
}

extension RigDevice {
    mutating func payValue(_ valueMinor: Int64, now: UInt64, random: inout SplitMix64) -> Bool { false }
}

/// The bounds of the rig's loops: one passed fails the seed, naming where, instead of hanging.
enum RigBounds {
    /// Rounds of one device's clock loop in one `advance` (a turn is at most 150 ms of
    /// simulated time, a host wakes at most once a millisecond).
    static let roundsPerAdvance = 100_000
    /// Lines a host and its device exchange at one instant.
    static let linesAtOnce = 10_000
    /// Core steps the executor carries out in one turn.
    static let stepsPerTurn = 10_000
}

/// coinsim's MDB changer (`MDBChangerDevice`) behind the daemon's host: every line the host
/// writes reaches the changer at once; its reply is lost at `lossRate` (the changer acted, the
/// host hears nothing and times out). While it pays, a coin leaves its tube every 80 ms; a
/// payout jams at `jamRate` a coin; the tube count read after a DISPENSE is one coin high at
/// `lagRate` (its sensor has not caught up; the next count is right). A customer puts a coin in
/// at `depositRate` a turn: it goes into a tube if the changer takes its type, as a changer
/// not held would take it mid-payout and hide a coin paid behind it.
struct RigChanger: RigDevice {
    var device: MDBChangerDevice
    var host = MDBChangerHost()
    var payer = MDBChangerPayer()
    var now: UInt64 = 0
    var lossRate: Double
    var jamRate: Double
    var lagRate: Double
    var depositRate: Double
    var nextCoinAt: UInt64?
    /// When the host's timers last ran: a timer that stays due runs again a millisecond later,
    /// as the daemon's loop wakes again, not at once.
    private var hostTicked: UInt64 = 0
    private(set) var paidByUnit: [Int: Int] = [:]
    private(set) var faults: [String: Int] = [:]
    private(set) var stuck: String?
    /// The replies lost are drawn from this, so the line's faults replay with the seed.
    private var line: SplitMix64

    /// `alternativePayout`: a level-3 changer that pays a value itself (PAYOUT 0Fh 02h).
    init(random: inout SplitMix64, faults: Bool, alternativePayout: Bool = false) {
        var settings = MDBChangerDevice.Settings(currency: "USD")!
        if alternativePayout { settings.features.insert(.alternativePayout) }
        settings.initialTubes = [Int.random(in: 5...30, using: &random), Int.random(in: 0...20, using: &random), Int.random(in: 5...30, using: &random)]
        device = MDBChangerDevice(settings: settings)
        lossRate = faults ? 0.03 : 0
        jamRate = faults ? 0.02 : 0
        lagRate = faults ? 0.2 : 0
        depositRate = faults ? 0.1 : 0
        line = SplitMix64(seed: random.next())
    }

    var amounts: [Int64] { [5, 10, 15, 25, 30, 35, 40, 50, 65, 75, 90, 100, 125, 150, 200, 260] }
    var holding: [Int] { Array(device.tubes.prefix(3)) }
    var unitValues: [Int: Int64] {
        Dictionary(uniqueKeysWithValues: (0..<device.settings.credits.count).compactMap { type in device.settings.valueMinor(ofType: type).map { (type, $0) } })
    }
    var state: PayingDeviceState { payer.state(of: host, connected: true) }

    mutating func calm() {
        lossRate = 0
        jamRate = 0
        lagRate = 0
        depositRate = 0
    }

    /// A changer's tubes are filled by coins it takes, not by an operator's refill.
    mutating func load(unit: Int, coins: Int) {}

    private mutating func carry(_ outputs: [MDBChangerHostOutput]) {
        var pending = outputs
        var lines = 0
        while !pending.isEmpty, stuck == nil {
            lines += 1
            if lines > RigBounds.linesAtOnce {
                stuck = "the MDB host and the changer exchanged over \(RigBounds.linesAtOnce) lines at one instant (\(now) ns): \(pending.prefix(3))"
                return
            }
            switch pending.removeFirst() {
            case .event(let event):
                payer.take(event)
            case .send(let command):
                let reply = device.handle(command.text[...])
                if device.isPaying, nextCoinAt == nil { nextCoinAt = now + 80_000_000 }
                if Double.random(in: 0..<1, using: &line) < lossRate {
                    faults["lost_reply", default: 0] += 1
                    continue
                }
                pending += host.received(Array((reply.text + "\r\n").utf8), at: now)
            }
        }
    }

    mutating func advance(to time: UInt64, hostAlive: Bool, random: inout SplitMix64) {
        if Double.random(in: 0..<1, using: &line) < depositRate, device.insert(type: Int.random(in: 0..<3, using: &line)) != .rejected {
            faults["deposit", default: 0] += 1
        }
        var rounds = 0
        while stuck == nil {
            rounds += 1
            if rounds > RigBounds.roundsPerAdvance {
                stuck = "the changer's clock loop passed \(RigBounds.roundsPerAdvance) rounds on the way to \(time) ns (at \(now) ns, host wake \(String(describing: host.nextWake)), next coin \(String(describing: nextCoinAt)))"
                return
            }
            let hostWake = hostAlive ? host.nextWake.map { max($0, hostTicked + 1_000_000) } : nil
            guard let next = [hostWake, nextCoinAt].compactMap({ $0 }).min(), next <= time else { break }
            now = max(now, next)
            if let coin = nextCoinAt, coin <= now {
                nextCoinAt = nil
                if device.isPaying, Double.random(in: 0..<1, using: &line) < jamRate {
                    device.jamPayout()
                    faults["jam", default: 0] += 1
                } else if let type = device.payOne() {
                    paidByUnit[type, default: 0] += 1
                    if !device.isPaying, Double.random(in: 0..<1, using: &line) < lagRate {
                        device.tubeSensorLag = (type, 1)
                        faults["tube_lag", default: 0] += 1
                    }
                }
                if device.isPaying { nextCoinAt = now + 80_000_000 }
            }
            if hostAlive, let wake = hostWake, wake <= now {
                hostTicked = now
                carry(host.tick(now: now))
            }
        }
        now = max(now, time)
    }

    mutating func takeDispensed() -> [DispenseCount] { payer.takeDispensed() }
    mutating func hold(_ on: Bool, now: UInt64, random: inout SplitMix64) { carry(host.holdForPayout(on, now: max(self.now, now))) }
    mutating func count(now: UInt64, random: inout SplitMix64) { carry(host.countTubes(now: max(self.now, now))) }

    mutating func dispense(type: Int, count: Int, now: UInt64, random: inout SplitMix64) -> Bool {
        let (accepted, outputs) = host.dispense(type: type, count: count, now: max(self.now, now))
        carry(outputs)
        return accepted
    }

    mutating func payValue(_ valueMinor: Int64, now: UInt64, random: inout SplitMix64) -> Bool {
        guard let scaled = MDBChangerPayer.scaled(valueMinor, host) else { return false }
        let (accepted, outputs) = host.payValue(scaled: scaled, now: max(self.now, now))
        carry(outputs)
        return accepted
    }

    func account(_ record: PayoutRecord) -> PayoutRestartAccount { payer.account(of: host) }

    mutating func restartHost(now: UInt64, random: inout SplitMix64) {
        self.now = max(self.now, now)
        host = MDBChangerHost()
        payer = MDBChangerPayer()
        carry(host.start(now: self.now))
        // The chain lets it take its three coins between payouts, as the daemon's does.
        carry(host.setAllowed(0x0007, now: self.now))
    }
}

/// coinsim's ccTalk payout hoppers (`CCTalkHopper`) behind the daemon's hopper bank: each
/// request reaches its hopper after 5 ms, one at a time, as on a bus. A reply is lost at
/// `lossRate` (the hopper acted; the host asks an idempotent request again, and hands the bank
/// silence for one that is not), refused with NAK at `nakRate` or answered BUSY at `busyRate`
/// (the hopper did nothing; BUSY is asked again up to the host's limit).
struct RigHoppers: RigDevice {
    static let units = [CCTalkHopperUnit(address: 3, coinID: "EU200A", valueMinor: 200), CCTalkHopperUnit(address: 4, coinID: "EU050A", valueMinor: 50),
                        CCTalkHopperUnit(address: 5, coinID: "EU010A", valueMinor: 10)]
    var hoppers: [CCTalkHopper]
    var bank = CCTalkHopperBank(units: RigHoppers.units)
    var now: UInt64 = 0
    var lossRate: Double
    var nakRate: Double
    var busyRate: Double
    /// A planted defect: a dispense whose reply is lost is sent again, as if it were
    /// idempotent (what `CCTalkRequest.isIdempotent` exists to prevent).
    var resendsLostDispense = false
    private var queue: [(at: UInt64, address: UInt8, request: CCTalkRequest, attempt: Int, busy: Int)] = []
    private var busUntil: UInt64 = 0
    /// When the bank's timers last ran (a timer that stays due runs again a millisecond later).
    private var bankTicked: UInt64 = 0
    private var dispensed: [DispenseCount] = []
    private(set) var faults: [String: Int] = [:]
    private(set) var stuck: String?
    private var line: SplitMix64

    init(random: inout SplitMix64, faults: Bool) {
        hoppers = Self.units.map { unit in
            var settings = CCTalkHopper.Settings()
            settings.address = unit.address
            settings.coinID = CoinID(unit.coinID)
            settings.serialNumber = 0x00_20_00 + UInt32(unit.address)
            settings.coins = Int.random(in: 3...25, using: &random)
            settings.payIntervalNanoseconds = 60_000_000
            if faults, Bool.random(using: &random) { settings.jamAfter = Int.random(in: 0...20, using: &random) }
            if faults, Bool.random(using: &random) { settings.powerDownAfter = Int.random(in: 0...20, using: &random) }
            return CCTalkHopper(settings: settings)
        }
        lossRate = faults ? 0.03 : 0
        nakRate = faults ? 0.01 : 0
        busyRate = faults ? 0.02 : 0
        line = SplitMix64(seed: random.next())
    }

    var amounts: [Int64] { [10, 20, 50, 60, 100, 150, 200, 250, 260, 300, 420, 500] }
    var holding: [Int] { hoppers.map(\.level) }
    var paidByUnit: [Int: Int] { Dictionary(uniqueKeysWithValues: hoppers.enumerated().map { ($0.offset, $0.element.paidCoins) }) }
    var state: PayingDeviceState { bank.payingState(currency: "EUR") }

    mutating func calm() {
        lossRate = 0
        nakRate = 0
        busyRate = 0
    }

    mutating func load(unit: Int, coins: Int) {
        hoppers[unit].load(coins)
    }

    private mutating func ask(_ asks: [CCTalkHopperBank.Ask]) {
        for ask in asks { queue.append((max(now, busUntil) + 5_000_000, ask.address, ask.request, 0, 0)) }
        busUntil = max(now, busUntil) + 5_000_000 * UInt64(asks.count)
    }

    private mutating func answered(_ address: UInt8, _ request: CCTalkRequest, _ answer: CCTalkAnswer?) {
        let asks = bank.answered(address, request, answer, now: now)
        dispensed += CCTalkHopperBank.counts(bank.takeFinished())
        ask(asks)
    }

    /// One request on the bus, as the hopper and the line treat it.
    private mutating func deliver(_ item: (at: UInt64, address: UInt8, request: CCTalkRequest, attempt: Int, busy: Int)) {
        guard let index = hoppers.firstIndex(where: { $0.settings.address == item.address }) else { return }
        let roll = Double.random(in: 0..<1, using: &line)
        let frame = item.request.frame(to: item.address, from: 1)
        if roll < nakRate + busyRate {
            // Refused: the hopper did nothing.
            if roll < nakRate {
                faults["nak", default: 0] += 1
                return answered(item.address, item.request, .nak)
            }
            faults["busy", default: 0] += 1
            guard item.busy >= 3 else {
                queue.append((now + 20_000_000, item.address, item.request, item.attempt, item.busy + 1))
                return
            }
            return answered(item.address, item.request, .busy)
        }
        hoppers[index].advance(to: now)
        let reply = hoppers[index].handle(frame, at: now)
        if item.request == .reset, reply != nil { hoppers[index].restart(at: now) }
        let lost = reply == nil || roll < nakRate + busyRate + lossRate
        if lost {
            if reply != nil { faults["lost_reply", default: 0] += 1 }
            let again = item.request.isIdempotent || (resendsLostDispense && item.request.header == .dispenseHopperCoins)
            if again, item.attempt < 2 {
                queue.append((now + 50_000_000, item.address, item.request, item.attempt + 1, item.busy))
                return
            }
            return answered(item.address, item.request, nil)
        }
        answered(item.address, item.request, try? item.request.answer(reply!))
    }

    mutating func advance(to time: UInt64, hostAlive: Bool, random: inout SplitMix64) {
        if !hostAlive { queue.removeAll() }
        var rounds = 0
        while stuck == nil {
            rounds += 1
            if rounds > RigBounds.roundsPerAdvance {
                stuck = "the hoppers' clock loop passed \(RigBounds.roundsPerAdvance) rounds on the way to \(time) ns (at \(now) ns, bank wake \(bank.nextWake), hopper events \(hoppers.map(\.nextEventAt)), \(queue.count) requests queued)"
                return
            }
            let bankWake = hostAlive ? max(bank.nextWake, bankTicked + 1_000_000) : nil
            let hopperWake = hoppers.compactMap(\.nextEventAt).min()
            guard let next = [bankWake, hopperWake, queue.map(\.at).min()].compactMap({ $0 }).min(), next <= time else { break }
            now = max(now, next)
            for index in hoppers.indices { hoppers[index].advance(to: now) }
            if let due = queue.indices.filter({ queue[$0].at <= now }).min(by: { queue[$0].at < queue[$1].at }) {
                deliver(queue.remove(at: due))
                continue
            }
            if hostAlive, let wake = bankWake, wake <= now {
                bankTicked = now
                ask(bank.tick(now: now))
            }
        }
        now = max(now, time)
        for index in hoppers.indices { hoppers[index].advance(to: now) }
    }

    mutating func takeDispensed() -> [DispenseCount] {
        defer { dispensed.removeAll() }
        return dispensed
    }

    var unitValues: [Int: Int64] { Dictionary(uniqueKeysWithValues: Self.units.enumerated().map { ($0.offset, $0.element.valueMinor) }) }

    mutating func hold(_ on: Bool, now: UInt64, random: inout SplitMix64) { ask(bank.hold(on)) }
    mutating func count(now: UInt64, random: inout SplitMix64) { ask(bank.count()) }

    mutating func dispense(type: Int, count: Int, now: UInt64, random: inout SplitMix64) -> Bool {
        guard let asks = bank.dispense(type, count: count) else { return false }
        ask(asks)
        return true
    }

    func account(_ record: PayoutRecord) -> PayoutRestartAccount { bank.restartAccount(record) }

    mutating func restartHost(now: UInt64, random: inout SplitMix64) {
        self.now = max(self.now, now)
        queue.removeAll()
        busUntil = self.now
        dispensed = []
        bank = CCTalkHopperBank(units: Self.units)
        ask(bank.start(now: self.now))
    }
}
