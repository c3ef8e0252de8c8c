import CoinMechCCTalk
import CoinSimCore
import Testing

/// coinsim's payout hopper on simulated time, request by request: what it answers, when its
/// coins drop, and how each fault leaves its status (166) and registers (163). Expected values
/// are the ones the simulator's specification gives (docs/SIMULATOR.md, "ccTalk hoppers"),
/// written out by hand; headers are their ccTalk numbers.
@Suite("ccTalk hopper (coinsim): dispense, status, empty, jam, power-down, emergency stop, reset, counter wrap")
struct CCTalkHopperDeviceTests {
    static let ms: UInt64 = 1_000_000
    static let address: UInt8 = 3
    static let ack = CCTalkFrame(destination: 1, source: 3, header: 0)
    static let nak = CCTalkFrame(destination: 1, source: 3, header: 5)

    static func reply(_ data: [UInt8]) -> CCTalkFrame { CCTalkFrame(destination: 1, source: 3, header: 0, data: data) }

    static func settings(coins: Int = 50, dispense: CCTalkHopper.DispenseVariant = .plain, serial: UInt32 = 0x00_20_03,
                         jamAfter: Int? = nil, powerDownAfter: Int? = nil) -> CCTalkHopper.Settings {
        var settings = CCTalkHopper.Settings()
        settings.address = address
        settings.coinID = CoinID("EU200A")
        settings.coins = coins
        settings.dispense = dispense
        settings.serialNumber = serial
        settings.payIntervalNanoseconds = 80 * ms
        settings.jamAfter = jamAfter
        settings.powerDownAfter = powerDownAfter
        settings.powerOffNanoseconds = 300 * ms
        return settings
    }

    /// The host's side of one hopper on simulated time (ms from power-up).
    final class Bench {
        var hopper: CCTalkHopper
        private(set) var now: UInt64 = 0

        init(_ settings: CCTalkHopper.Settings = CCTalkHopperDeviceTests.settings()) {
            hopper = CCTalkHopper(settings: settings)
        }

        /// Sends a request from the host (address 1) now; the reply, or nil for silence.
        func ask(_ header: UInt8, _ data: [UInt8] = []) -> CCTalkFrame? {
            hopper.handle(CCTalkFrame(destination: CCTalkHopperDeviceTests.address, source: 1, header: header, data: data), at: now)
        }

        /// Lets `milliseconds` pass.
        func wait(_ milliseconds: UInt64) {
            now += milliseconds * CCTalkHopperDeviceTests.ms
            hopper.advance(to: now)
        }

        /// Header 166: [event counter, remaining, last paid, last unpaid].
        var status: [UInt8]? { ask(166)?.data }
        /// Header 163: registers 1 to 3.
        var registers: [UInt8]? { ask(163)?.data }

        /// Header 1, and the restart that follows once its ACK is out.
        func reset() -> CCTalkFrame? {
            let reply = ask(1)
            hopper.restart(at: now)
            return reply
        }
    }

    @Test("it answers identification: poll, Payout, CoinMech, coinsim-hopper, serial LSB first, coinsim-1, comms 1.4.6, its coin id; NAK to others")
    func identification() {
        let bench = Bench(Self.settings(serial: 0x12_34_56))
        #expect(bench.ask(254) == Self.ack)
        #expect(bench.ask(245) == Self.reply(Array("Payout".utf8)))
        #expect(bench.ask(246) == Self.reply(Array("CoinMech".utf8)))
        #expect(bench.ask(244) == Self.reply(Array("coinsim-hopper".utf8)))
        #expect(bench.ask(242) == Self.reply([0x56, 0x34, 0x12]))
        #expect(bench.ask(241) == Self.reply(Array("coinsim-1".utf8)))
        #expect(bench.ask(4) == Self.reply([1, 4, 6]))
        #expect(bench.ask(171) == Self.reply(Array("EU200A".utf8)))
        #expect(bench.ask(229) == Self.nak)
        #expect(bench.ask(184, [1]) == Self.nak)
        // Frames for another address are not its business.
        #expect(bench.hopper.handle(CCTalkFrame(destination: 4, source: 1, header: 254), at: 0) == nil)
    }

    @Test("at power-up: counter 0, nothing paid, register 1 says power-up detected and payout disabled; A5h enables, anything else disables")
    func powerUpAndEnable() {
        let bench = Bench()
        #expect(bench.status == [0, 0, 0, 0])
        #expect(bench.registers == [0b1100_0000, 0, 0])
        #expect(bench.ask(164, [0xA5]) == Self.ack)
        #expect(bench.registers == [0b0100_0000, 0, 0])
        #expect(bench.ask(164, [0x01]) == Self.ack)
        #expect(bench.registers == [0b1100_0000, 0, 0])
        #expect(bench.ask(164) == Self.nak)
        #expect(bench.ask(164, [0xA5, 0xA5]) == Self.nak)
        #expect(bench.registers == [0b1100_0000, 0, 0])
    }

    @Test("dispense 5 is ACKed with counter 1, then pays one coin every 80 ms: remaining counts down, last paid up, last unpaid stays 0")
    func dispensePaysAtTheInterval() {
        let bench = Bench()
        #expect(bench.ask(164, [0xA5]) == Self.ack)
        #expect(bench.ask(167, [5]) == Self.reply([1]))
        #expect(bench.status == [1, 5, 0, 0])
        bench.wait(79)
        #expect(bench.status == [1, 5, 0, 0])
        #expect(bench.hopper.level == 50)
        for paid in 1...5 {
            bench.wait(paid == 1 ? 1 : 80)
            #expect(bench.status == [1, UInt8(5 - paid), UInt8(paid), 0])
            #expect(bench.hopper.level == 50 - paid)
        }
        bench.wait(1_000)
        #expect(bench.status == [1, 0, 5, 0])
        #expect(bench.hopper.level == 45)
        #expect(bench.hopper.paidCoins == 5)
        #expect(bench.hopper.payouts.compactMap(\.ended) == [.done])
        // The next dispense counts on from 1.
        #expect(bench.ask(167, [2]) == Self.reply([2]))
        #expect(bench.status == [2, 2, 0, 0])
    }

    @Test("serial-number variant: the right serial (LSB first) pays, a wrong serial or the plain form is NAKed")
    func serialVariant() {
        let bench = Bench(Self.settings(dispense: .serial, serial: 0x12_34_56))
        #expect(bench.ask(164, [0xA5]) == Self.ack)
        #expect(bench.ask(167, [0x56, 0x34, 0x13, 3]) == Self.nak)
        #expect(bench.ask(167, [0x12, 0x34, 0x56, 3]) == Self.nak)  // most significant byte first
        #expect(bench.ask(167, [3]) == Self.nak)
        #expect(bench.ask(167, [0x56, 0x34, 0x12]) == Self.nak)
        #expect(bench.status == [0, 0, 0, 0])
        #expect(bench.ask(167, [0x56, 0x34, 0x12, 3]) == Self.reply([1]))
        bench.wait(240)
        #expect(bench.status == [1, 0, 3, 0])
    }

    @Test("a plain hopper NAKs the serial-number form")
    func plainRefusesSerialForm() {
        let bench = Bench()
        #expect(bench.ask(164, [0xA5]) == Self.ack)
        #expect(bench.ask(167, [0x03, 0x20, 0x00, 3]) == Self.nak)
        #expect(bench.status == [0, 0, 0, 0])
    }

    @Test("dispense is NAKed while payout is disabled, while a payout is under way, and for 0 coins; the counter does not move")
    func refusedWhenDisabledBusyOrZero() {
        let bench = Bench()
        #expect(bench.ask(167, [5]) == Self.nak)  // disabled since power-up
        #expect(bench.ask(164, [0xA5]) == Self.ack)
        #expect(bench.ask(167, [0]) == Self.nak)
        #expect(bench.ask(167, []) == Self.nak)
        #expect(bench.status == [0, 0, 0, 0])
        #expect(bench.ask(167, [3]) == Self.reply([1]))
        bench.wait(80)
        #expect(bench.ask(167, [1]) == Self.nak)  // busy
        #expect(bench.status == [1, 2, 1, 0])
        bench.wait(160)
        #expect(bench.status == [1, 0, 3, 0])
        #expect(bench.ask(164, [0x00]) == Self.ack)
        #expect(bench.ask(167, [1]) == Self.nak)
        #expect(bench.status == [1, 0, 3, 0])
        #expect(bench.hopper.level == 47)
    }

    @Test("running empty mid-payout stops it with the rest unpaid and sets register 1 bit 1 (payout timeout), which needs no reset")
    func emptyMidPayout() {
        let bench = Bench(Self.settings(coins: 3))
        #expect(bench.ask(164, [0xA5]) == Self.ack)
        #expect(bench.ask(167, [5]) == Self.reply([1]))
        bench.wait(1_000)
        #expect(bench.status == [1, 0, 3, 2])
        #expect(bench.registers == [0b0100_0010, 0, 0])
        #expect(bench.hopper.level == 0)
        #expect(bench.hopper.paidCoins == 3)
        #expect(bench.hopper.empties == 1)
        // Payout timeout is not a flag that needs a reset: the next dispense is taken, and pays nothing.
        #expect(bench.ask(167, [2]) == Self.reply([2]))
        bench.wait(1_000)
        #expect(bench.status == [2, 0, 0, 2])
        #expect(bench.hopper.paidCoins == 3)
    }

    @Test("jam_after 3: the 4th coin jams, the payout stops with 2 unpaid, register 1 bit 0 set, dispenses NAKed until a reset; it jams once")
    func jamAfter() {
        let bench = Bench(Self.settings(jamAfter: 3))
        #expect(bench.ask(164, [0xA5]) == Self.ack)
        #expect(bench.ask(167, [5]) == Self.reply([1]))
        bench.wait(1_000)
        #expect(bench.status == [1, 0, 3, 2])
        #expect(bench.registers == [0b0100_0001, 0, 0])
        #expect(bench.hopper.level == 47)
        #expect(bench.hopper.jams == 1)
        #expect(bench.ask(167, [1]) == Self.nak)
        #expect(bench.reset() == Self.ack)
        #expect(bench.registers == [0b1100_0000, 0, 0])
        #expect(bench.ask(164, [0xA5]) == Self.ack)
        #expect(bench.ask(167, [4]) == Self.reply([1]))
        bench.wait(1_000)
        #expect(bench.status == [1, 0, 4, 0])
        #expect(bench.hopper.level == 43)
        #expect(bench.hopper.jams == 1)
    }

    @Test("power_down_after 2: silent for power_off_ms, then counter 0, payout disabled, power-up and power-down-during-payout flags, paid 2 unpaid 3 kept")
    func powerDownAfter() {
        let bench = Bench(Self.settings(powerDownAfter: 2))
        #expect(bench.ask(164, [0xA5]) == Self.ack)
        #expect(bench.ask(167, [5]) == Self.reply([1]))
        bench.wait(239)  // coins at 80 and 160 ms; the third is due at 240
        #expect(bench.status == [1, 3, 2, 0])
        bench.wait(1)
        #expect(bench.ask(254) == nil)
        #expect(bench.status == nil)
        #expect(bench.registers == nil)
        bench.wait(299)
        #expect(bench.ask(254) == nil)
        bench.wait(1)  // 300 ms after the power went
        #expect(bench.ask(254) == Self.ack)
        #expect(bench.status == [0, 0, 2, 3])
        #expect(bench.registers == [0b1100_0000, 0, 0b0000_0001])
        #expect(bench.hopper.level == 48)
        #expect(bench.hopper.powerDowns == 1)
        // Disabled, and once enabled still refused: power-down during payout needs a reset.
        #expect(bench.ask(167, [1]) == Self.nak)
        #expect(bench.ask(164, [0xA5]) == Self.ack)
        #expect(bench.ask(167, [1]) == Self.nak)
        #expect(bench.reset() == Self.ack)
        #expect(bench.registers == [0b1100_0000, 0, 0])
        #expect(bench.status == [0, 0, 2, 3])
        // It fires once: the next payout pays in full.
        #expect(bench.ask(164, [0xA5]) == Self.ack)
        #expect(bench.ask(167, [3]) == Self.reply([1]))
        bench.wait(1_000)
        #expect(bench.status == [1, 0, 3, 0])
        #expect(bench.hopper.powerDowns == 1)
        #expect(bench.hopper.paidCoins == 5)
    }

    @Test("emergency stop mid-payout answers the coins left unpaid, makes them last unpaid, disables payout, and no more coins drop")
    func emergencyStop() {
        let bench = Bench()
        #expect(bench.ask(164, [0xA5]) == Self.ack)
        #expect(bench.ask(167, [10]) == Self.reply([1]))
        bench.wait(250)  // 3 coins paid
        #expect(bench.ask(172) == Self.reply([7]))
        #expect(bench.status == [1, 0, 3, 7])
        #expect(bench.registers == [0b1100_0000, 0, 0])
        bench.wait(2_000)
        #expect(bench.hopper.level == 47)
        #expect(bench.status == [1, 0, 3, 7])
        // Nothing under way: 0 unpaid, the last payout's counts untouched.
        #expect(bench.ask(172) == Self.reply([0]))
        #expect(bench.status == [1, 0, 3, 7])
    }

    @Test("reset: ACK, then counter 0, payout disabled, every fault flag cleared, power-up detected set; last paid and unpaid kept")
    func resetClearsFlags() {
        let bench = Bench(Self.settings(coins: 2, jamAfter: 3))
        #expect(bench.ask(164, [0xA5]) == Self.ack)
        #expect(bench.ask(167, [4]) == Self.reply([1]))
        bench.wait(1_000)
        #expect(bench.status == [1, 0, 2, 2])
        #expect(bench.registers == [0b0100_0010, 0, 0])
        #expect(bench.reset() == Self.ack)
        #expect(bench.status == [0, 0, 2, 2])
        #expect(bench.registers == [0b1100_0000, 0, 0])
        #expect(bench.ask(167, [1]) == Self.nak)  // disabled by the reset
    }

    @Test("the event counter goes 1 to 255 and wraps to 1, never back to 0")
    func counterWraps() {
        let bench = Bench(Self.settings(coins: 1_000))
        #expect(bench.ask(164, [0xA5]) == Self.ack)
        for counter in 1...255 {
            #expect(bench.ask(167, [1]) == Self.reply([UInt8(counter)]))
            bench.wait(80)
        }
        #expect(bench.status == [255, 0, 1, 0])
        #expect(bench.ask(167, [1]) == Self.reply([1]))
        bench.wait(80)
        #expect(bench.ask(167, [1]) == Self.reply([2]))
        bench.wait(80)
        #expect(bench.status == [2, 0, 1, 0])
        #expect(bench.hopper.paidCoins == 257)
    }
}
