import CoinMechCCTalk
import Testing

/// The host's side of payout hoppers, with no line: the frames it sends byte for byte, and how
/// `CCTalkHopperBank` turns a hopper's answers into what a dispense paid. Expected values come
/// from the ccTalk Generic Specification, not from the code:
/// - part 1, §6 and §7: a frame is [destination][data length][source][header][data…][checksum],
///   and the simple checksum makes all its bytes add up to 0 modulo 256;
/// - part 2, header 164 "Enable hopper" (data A5h enables), 163 "Test hopper" (three registers),
///   166 "Request hopper status" ([event counter][payout coins remaining][last payout: coins
///   paid][last payout: coins unpaid]; the counter is 0 at power-up, then 1…255 and round to 1),
///   167 "Dispense hopper coins" ([N], or [serial 1][serial 2][serial 3][N] with the serial
///   number least significant byte first), 172 "Emergency stop" (reply: coins remaining), and
///   register 3 bit 0 "power down during payout".
@Suite("ccTalk hopper host: golden frames, a dispense never sent twice, and what each answer says was paid")
struct CCTalkHopperBankTests {
    static func encoded(_ request: CCTalkRequest, to address: UInt8 = 3) -> [UInt8] {
        request.frame(to: address, from: 1).encoded(.simple)
    }

    @Test("the hopper requests, byte for byte as the specification frames them (worked by hand)", arguments: [
        // 3+1+1+164+165 = 334 ≡ 78: checksum 178.
        (CCTalkRequest.enableHopper(true), [3, 1, 1, 164, 0xA5, 178] as [UInt8]),
        (.enableHopper(false), [3, 1, 1, 164, 0x00, 87]),
        // 3+0+1+166 = 170: checksum 86.
        (.hopperStatus, [3, 0, 1, 166, 86]),
        (.testHopper, [3, 0, 1, 163, 89]),
        // 3+1+1+167+5 = 177: checksum 79.
        (.dispenseHopperCoins(count: 5, serialNumber: nil), [3, 1, 1, 167, 5, 79]),
        // Serial 123456h least significant first: 56h 34h 12h; 3+4+1+167+86+52+18+5 = 336 ≡ 80.
        (.dispenseHopperCoins(count: 5, serialNumber: 0x12_3456), [3, 4, 1, 167, 0x56, 0x34, 0x12, 5, 176]),
        (.emergencyStop, [3, 0, 1, 172, 80]),
        (.hopperCoin, [3, 0, 1, 171, 81]),
    ])
    func frames(request: CCTalkRequest, bytes: [UInt8]) {
        #expect(Self.encoded(request) == bytes)
        #expect(bytes.reduce(0) { ($0 + Int($1)) % 256 } == 0)
    }

    @Test("a hopper's replies read as the specification lays them out")
    func replies() throws {
        // Status: counter 7, nothing remaining, 5 paid, 0 unpaid.
        let status = try CCTalkRequest.hopperStatus.answer(CCTalkFrame(destination: 1, source: 3, header: 0, data: [7, 0, 5, 0]))
        #expect(status == .reply(.hopperStatus(CCTalkHopperStatus(eventCounter: 7, remaining: 0, lastPaid: 5, lastUnpaid: 0))))
        // Registers: power-up and disabled (C0h), power down during payout (register 3 bit 0).
        guard case .reply(.hopperRegisters(let registers)) = try CCTalkRequest.testHopper.answer(
            CCTalkFrame(destination: 1, source: 3, header: 0, data: [0xC0, 0, 0x01])) else { Issue.record("not registers"); return }
        #expect(registers.powerUpDetected && registers.payoutDisabled && registers.powerDownDuringPayout && registers.needsReset)
        #expect(try CCTalkRequest.emergencyStop.answer(CCTalkFrame(destination: 1, source: 3, header: 0, data: [3])) == .reply(.stopped(unpaid: 3)))
        #expect(throws: CCTalkReplyError.self) { try CCTalkRequest.hopperStatus.answer(CCTalkFrame(destination: 1, source: 3, header: 0, data: [1, 2])) }
        // 255 wraps to 1: 0 is only the power-up value.
        #expect(CCTalkHopperStatus.counter(254, after: 2) == 1 && CCTalkHopperStatus.counter(0, after: 1) == 1)
    }

    @Test("a dispense whose reply never comes is not sent again: the host reports no reply and moves on")
    func lostDispenseNotRetried() {
        var configuration = CCTalkHostConfiguration()
        configuration.echo = .off
        configuration.otherAddresses = [3]
        var host = CCTalkHost(configuration: configuration, persisted: nil)
        var sent: [[UInt8]] = []
        var answers: [CCTalkHostEvent] = []
        func take(_ outputs: [CCTalkHostOutput]) {
            for output in outputs {
                switch output {
                case .send(let bytes): sent.append(bytes)
                case .event(let event): if case .deviceAnswer = event { answers.append(event) }
                }
            }
        }
        let ms: UInt64 = 1_000_000
        take(host.start(now: 0))
        take(host.ask(.dispenseHopperCoins(count: 2, serialNumber: nil), at: 3, now: 0))
        // Nobody answers anything for two seconds.
        for t in stride(from: UInt64(0), through: 2_000, by: 10) { take(host.tick(now: t * ms)) }
        let dispenses = sent.filter { $0.first == 3 && $0.count > 3 && $0[3] == 167 }
        #expect(dispenses.count == 1, "sent once: \(dispenses)")
        #expect(answers == [.deviceAnswer(address: 3, .dispenseHopperCoins(count: 2, serialNumber: nil), nil)])
    }

    // MARK: The bank

    static let units = [CCTalkHopperUnit(address: 3, coinID: "EU200A", valueMinor: 200), CCTalkHopperUnit(address: 4, coinID: "EU050A", valueMinor: 50)]

    /// A bank whose hoppers have answered who they are, idle at `counters`.
    static func ready(counters: [UInt8] = [7, 20]) -> CCTalkHopperBank {
        var bank = CCTalkHopperBank(units: units)
        _ = bank.start(now: 0)
        for (index, unit) in units.enumerated() {
            _ = bank.answered(unit.address, .serialNumber, .reply(.serialNumber(UInt32(100 + index))), now: 0)
            _ = bank.answered(unit.address, .hopperCoin, .reply(.coinID(CoinID(unit.coinID))), now: 0)
            _ = bank.answered(unit.address, .testHopper, .reply(.hopperRegisters(CCTalkHopperRegisters(bytes: [0x80, 0, 0]))), now: 0)
            _ = bank.answered(unit.address, .hopperStatus, .reply(.hopperStatus(CCTalkHopperStatus(eventCounter: counters[index], remaining: 0, lastPaid: 0, lastUnpaid: 0))), now: 0)
        }
        _ = bank.hold(true)
        return bank
    }

    static func status(_ counter: UInt8, remaining: UInt8 = 0, paid: UInt8, unpaid: UInt8 = 0) -> CCTalkAnswer {
        .reply(.hopperStatus(CCTalkHopperStatus(eventCounter: counter, remaining: remaining, lastPaid: paid, lastUnpaid: unpaid)))
    }

    static let clear = CCTalkAnswer.reply(.hopperRegisters(CCTalkHopperRegisters(bytes: [0, 0, 0])))

    /// The round a finished dispense waits for: every hopper's status read afresh.
    static func round(_ bank: inout CCTalkHopperBank, _ counters: [UInt8] = [8, 20], paid: [UInt8] = [0, 0]) {
        for (index, unit) in units.enumerated() {
            _ = bank.answered(unit.address, .hopperStatus, status(counters[index], paid: paid[index]), now: 400_000_000)
        }
    }

    @Test("a payout left open is settled from the hopper that paid it only: its serial number read and the one journalled; another hopper unread or exchanged changes nothing")
    func sameHopperBySerial() {
        var bank = CCTalkHopperBank(units: Self.units)
        _ = bank.start(now: 0)
        #expect(bank.identity == "hoppers 3:?:EU200A,4:?:EU050A")
        _ = bank.answered(3, .serialNumber, .reply(.serialNumber(100)), now: 0)
        // Journalled with hopper 4's serial number not read: hopper 3's is still recorded.
        let journalled = bank.identity
        #expect(journalled == "hoppers 3:100:EU200A,4:?:EU050A")
        #expect(bank.sameHopper(0, as: journalled) == .same)
        // Read later, hopper 4 may pay a later step: an unread entry cannot vouch for it.
        _ = bank.answered(4, .serialNumber, .reply(.serialNumber(101)), now: 0)
        #expect(bank.sameHopper(1, as: journalled) == .other("its serial number was not read when the payout was journalled"))
        // The next start: hopper 3 not read yet, then another hopper at its address.
        var next = CCTalkHopperBank(units: Self.units)
        _ = next.start(now: 0)
        #expect(next.sameHopper(0, as: journalled) == .unread)
        _ = next.answered(4, .serialNumber, .reply(.serialNumber(999)), now: 0)
        #expect(next.sameHopper(0, as: journalled) == .unread, "hopper 4 says nothing about hopper 3")
        _ = next.answered(3, .serialNumber, .reply(.serialNumber(555)), now: 0)
        #expect(next.sameHopper(0, as: journalled) == .other("it is another hopper than the one that paid (serial number 100 then, 555 now)"))
        #expect(next.sameHopper(0, as: nil) == .unrecorded && next.sameHopper(0, as: "CMS 1; 2=USD25") == .unrecorded)
        // The configuration reordered since: unit 0 is now the hopper at address 4, whose own
        // serial number matches its own entry, but not the one in unit 0's place.
        var swapped = CCTalkHopperBank(units: [Self.units[1], Self.units[0]])
        _ = swapped.start(now: 0)
        _ = swapped.answered(4, .serialNumber, .reply(.serialNumber(101)), now: 0)
        _ = swapped.answered(3, .serialNumber, .reply(.serialNumber(100)), now: 0)
        let full = "hoppers 3:100:EU200A,4:101:EU050A"
        #expect(swapped.sameHopper(0, as: full) == .other("unit 0 was address 3 paying EU200A when the payout was journalled, and is address 4 paying EU050A now"))
        #expect(bank.sameHopper(1, as: full) == .same && bank.sameHopper(0, as: full) == .same)
    }

    @Test("a counter that moves other than by a dispense (a restart, another hopper at the address) has the serial number read again; a step names the hopper that was to pay it")
    func exchangedHopperReadAgain() {
        var bank = Self.ready()
        #expect(bank.unitIdentity(1) == "4:101:EU050A")
        // A dispense moves a counter by one: nothing is read again.
        #expect(bank.answered(3, .hopperStatus, Self.status(8, paid: 1), now: 1).isEmpty)
        #expect(bank.unitIdentity(0) == "3:100:EU200A")
        // Hopper 4 exchanged for another: its counter reads 0.
        let asks = bank.answered(4, .hopperStatus, Self.status(0, paid: 0), now: 2)
        #expect(asks.map(\.request) == [.serialNumber, .hopperCoin])
        #expect(bank.unitIdentity(1) == nil && !bank.canPay(1), "it pays nothing until it says who it is")
        _ = bank.answered(4, .serialNumber, .reply(.serialNumber(777)), now: 3)
        _ = bank.answered(4, .hopperCoin, .reply(.coinID(CoinID("EU050A"))), now: 3)
        #expect(bank.unitIdentity(1) == "4:777:EU050A" && bank.canPay(1))
        // The payout's identity names the old hopper; a step journalled since names the new one.
        let journalled = "hoppers 3:100:EU200A,4:101:EU050A"
        #expect(bank.sameHopper(1, as: journalled) == .other("it is another hopper than the one that paid (serial number 101 then, 777 now)"))
        #expect(bank.sameHopper(1, as: journalled, step: "4:777:EU050A") == .same)
        #expect(bank.sameHopper(1, as: journalled, step: "4:101:EU050A") == .other("it is another hopper than the one that paid (serial number 101 then, 777 now)"))
        #expect(bank.sameHopper(1, as: journalled, step: "3:100:EU200A")
            == .other("unit 1 was address 3 paying EU200A when the payout was journalled, and is address 4 paying EU050A now"))
    }

    @Test("a dispense journals the counter read before it; done when the counter is one past it and nothing remains")
    func paysByItsOwnCount() throws {
        var bank = Self.ready()
        #expect(bank.isIdle && bank.mark(0) == 7 && bank.identity == "hoppers 3:100:EU200A,4:101:EU050A")
        let asked = bank.dispense(0, count: 3)
        let asks = try #require(asked)
        #expect(asks.map(\.request) == [.enableHopper(true), .dispenseHopperCoins(count: 3, serialNumber: nil)])
        #expect(bank.dispense(1, count: 1) == nil, "one dispense at a time")
        _ = bank.answered(3, .dispenseHopperCoins(count: 3, serialNumber: nil), .reply(.dispenseTaken(eventCounter: 8)), now: 10)
        _ = bank.answered(3, .hopperStatus, Self.status(8, remaining: 1, paid: 2), now: 200_000_000)
        #expect(bank.takeFinished().isEmpty)
        let last = bank.answered(3, .hopperStatus, Self.status(8, paid: 3), now: 300_000_000)
        #expect(last.map(\.request) == [.testHopper])
        _ = bank.answered(3, .testHopper, Self.clear, now: 310_000_000)
        #expect(bank.takeFinished().isEmpty && !bank.isIdle, "held back until every hopper is read again: the next step's mark is fresh")
        Self.round(&bank, [8, 20], paid: [3, 0])
        #expect(bank.takeFinished() == [CCTalkHopperPayment(unit: 0, count: 3, taken: true, paid: 3, unpaid: 0, certain: true, why: nil)])
        #expect(bank.isIdle && bank.mark(0) == 8)
    }

    @Test("a dispense whose reply is lost was taken if the counter moved, and not taken if it stayed twice")
    func lostReplyByCounter() {
        var taken = Self.ready()
        _ = taken.dispense(0, count: 2)
        #expect(taken.answered(3, .dispenseHopperCoins(count: 2, serialNumber: nil), nil, now: 10).map(\.request) == [.hopperStatus])
        _ = taken.answered(3, .hopperStatus, Self.status(8, paid: 2), now: 20)
        _ = taken.answered(3, .testHopper, Self.clear, now: 30)
        Self.round(&taken, [8, 20], paid: [2, 0])
        #expect(taken.takeFinished().first?.paid == 2)

        var notTaken = Self.ready()
        _ = notTaken.dispense(0, count: 2)
        _ = notTaken.answered(3, .dispenseHopperCoins(count: 2, serialNumber: nil), nil, now: 10)
        _ = notTaken.answered(3, .hopperStatus, Self.status(7, paid: 0), now: 20)
        #expect(notTaken.takeFinished().isEmpty, "once is not enough: the dispense may still be on its way")
        _ = notTaken.answered(3, .hopperStatus, Self.status(7, paid: 0), now: 200_000_000)
        _ = notTaken.answered(3, .testHopper, Self.clear, now: 210_000_000)
        Self.round(&notTaken, [7, 20])
        #expect(notTaken.takeFinished() == [CCTalkHopperPayment(unit: 0, count: 2, taken: false, paid: 0, unpaid: 0, certain: true,
                                                                 why: "the hopper did not take the dispense")])
    }

    @Test("power lost mid-payout: the counts the hopper kept are believed; a restart without that flag is not")
    func powerDown() {
        var bank = Self.ready()
        _ = bank.dispense(0, count: 3)
        _ = bank.answered(3, .dispenseHopperCoins(count: 3, serialNumber: nil), .reply(.dispenseTaken(eventCounter: 8)), now: 10)
        _ = bank.answered(3, .hopperStatus, Self.status(0, paid: 1, unpaid: 2), now: 500_000_000)
        _ = bank.answered(3, .testHopper, .reply(.hopperRegisters(CCTalkHopperRegisters(bytes: [0xC0, 0, 0x01]))), now: 510_000_000)
        Self.round(&bank, [0, 20], paid: [1, 0])
        let payment = bank.takeFinished().first
        #expect(payment?.paid == 1 && payment?.unpaid == 2 && payment?.certain == true && payment?.taken == true)
        // Held: a hopper that needs a reset is not reset while a payout may need its counter.
        #expect(bank.tick(now: 5_000_000_000).allSatisfy { $0.request != .reset })
        #expect(bank.dispense(0, count: 1) == nil, "it needs a reset before it pays again")
        _ = bank.hold(false)
        #expect(bank.tick(now: 10_000_000_000).contains { $0.address == 3 && $0.request == .reset })

        var restarted = Self.ready()
        _ = restarted.dispense(0, count: 3)
        _ = restarted.answered(3, .dispenseHopperCoins(count: 3, serialNumber: nil), .reply(.dispenseTaken(eventCounter: 8)), now: 10)
        _ = restarted.answered(3, .hopperStatus, Self.status(0, paid: 0, unpaid: 0), now: 500_000_000)
        _ = restarted.answered(3, .testHopper, .reply(.hopperRegisters(CCTalkHopperRegisters(bytes: [0xC0, 0, 0]))), now: 510_000_000)
        Self.round(&restarted, [0, 20])
        let unknown = restarted.takeFinished().first
        #expect(unknown?.certain == false && unknown?.paid == 0, "what it paid cannot be told: nothing more is paid on it")
    }

    @Test("power cut during the first dispense after a power-up (mark 0): the flag says it was taken, before the mark says it was not")
    func powerDownFromMarkZero() {
        var bank = Self.ready(counters: [0, 20])
        _ = bank.dispense(0, count: 2)
        // The reply is lost with the power; the hopper comes back at counter 0, flag set.
        _ = bank.answered(3, .dispenseHopperCoins(count: 2, serialNumber: nil), nil, now: 10)
        _ = bank.answered(3, .hopperStatus, Self.status(0, paid: 1, unpaid: 1), now: 500_000_000)
        _ = bank.answered(3, .hopperStatus, Self.status(0, paid: 1, unpaid: 1), now: 700_000_000)
        _ = bank.answered(3, .testHopper, .reply(.hopperRegisters(CCTalkHopperRegisters(bytes: [0xC0, 0, 0x01]))), now: 710_000_000)
        Self.round(&bank, [0, 20], paid: [1, 0])
        let payment = bank.takeFinished().first
        #expect(payment?.taken == true && payment?.paid == 1 && payment?.unpaid == 1 && payment?.certain == true, "\(String(describing: payment))")
    }

    @Test("seen paying, then back at counter 0 without the flag: never 'not taken', and what it paid at least is kept")
    func restartAfterTaking() {
        var bank = Self.ready(counters: [0, 20])
        _ = bank.dispense(0, count: 4)
        _ = bank.answered(3, .dispenseHopperCoins(count: 4, serialNumber: nil), .reply(.dispenseTaken(eventCounter: 1)), now: 10)
        _ = bank.answered(3, .hopperStatus, Self.status(1, remaining: 1, paid: 3), now: 300_000_000)
        // A brown-out after its last coin: counter 0 again, no "power down during payout".
        _ = bank.answered(3, .hopperStatus, Self.status(0, paid: 4), now: 400_000_000)
        _ = bank.answered(3, .testHopper, .reply(.hopperRegisters(CCTalkHopperRegisters(bytes: [0xC0, 0, 0]))), now: 410_000_000)
        Self.round(&bank, [0, 20])
        let payment = bank.takeFinished().first
        #expect(payment?.taken == true && payment?.certain == false && payment?.paid == 3, "\(String(describing: payment))")
    }

    @Test("a status read that failed leaves the hopper's counter unknown: it cannot pay until read again")
    func staleStatusCannotPay() {
        var bank = Self.ready()
        _ = bank.count()
        _ = bank.answered(3, .hopperStatus, Self.status(7, paid: 0), now: 10)
        _ = bank.answered(4, .hopperStatus, nil, now: 20)
        #expect(!bank.canPay(1) && bank.dispense(1, count: 1) == nil, "no dispense on a counter that may be stale")
        _ = bank.answered(4, .hopperStatus, Self.status(20, paid: 0), now: 30)
        #expect(bank.canPay(1))
    }

    @Test("a hopper that does not answer does not hold the others up: the round goes on without it, and it cannot pay")
    func silentHopperLeftOut() {
        var bank = Self.ready()
        _ = bank.hold(false)
        _ = bank.count()
        _ = bank.answered(3, .hopperStatus, Self.status(7, paid: 0), now: 10)
        for _ in 0..<3 { _ = bank.answered(4, .hopperStatus, nil, now: 20) }
        #expect(bank.rounds == 1 && !bank.canPay(1) && bank.canPay(0) && bank.isIdle, "rounds \(bank.rounds)")
    }

    @Test("a payout that stops moving is stopped with 172, and the hopper's account of it is what was paid")
    func stallStopped() {
        var bank = Self.ready()
        _ = bank.dispense(1, count: 4)
        _ = bank.answered(4, .dispenseHopperCoins(count: 4, serialNumber: nil), .reply(.dispenseTaken(eventCounter: 21)), now: 0)
        _ = bank.answered(4, .hopperStatus, Self.status(21, remaining: 3, paid: 1), now: 100_000_000)
        let asks = bank.tick(now: 11_000_000_000)
        #expect(asks.contains { $0.address == 4 && $0.request == .emergencyStop })
        _ = bank.answered(4, .emergencyStop, .reply(.stopped(unpaid: 3)), now: 11_010_000_000)
        _ = bank.answered(4, .hopperStatus, Self.status(21, paid: 1, unpaid: 3), now: 11_100_000_000)
        _ = bank.answered(4, .testHopper, .reply(.hopperRegisters(CCTalkHopperRegisters(bytes: [0x80, 0, 0]))), now: 11_110_000_000)
        Self.round(&bank, [7, 21], paid: [0, 1])
        let payment = bank.takeFinished().first
        #expect(payment?.paid == 1 && payment?.unpaid == 3 && payment?.certain == true)
        #expect(payment?.why?.contains("stopped") == true)
    }
}
