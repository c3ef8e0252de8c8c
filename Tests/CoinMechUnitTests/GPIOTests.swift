import CoinFacts
import CoinMechChain
import CoinMechGPIO
import CoinMechHotplug
import CoinMechPlugins
@testable import CoinMechTestSupport
import Foundation
import Testing

@Suite("GPIO decoders on recorded edge streams")
struct GPIODecoderTests {
    func edges(_ name: String) throws -> [EdgeEvent] {
        try EdgeStream.parse(String(contentsOfFile: "\(TestSupport.packageRoot)/Tests/Fixtures/edges/\(name)", encoding: .utf8))
    }

    /// Runs a pulse decoder over a stream, then lets the last gap pass.
    func decode(_ name: String) throws -> (coins: [PulseCoin], glitches: Int) {
        var decoder = PulseDecoder(settings: .init(line: 4, activeLow: true, minimumPulseMilliseconds: 10, gapMilliseconds: 150, highestChannel: 6))
        var coins: [PulseCoin] = []
        let stream = try edges(name)
        for edge in stream { if let coin = decoder.feed(edge) { coins.append(coin) } }
        if let coin = decoder.poll(now: (stream.last?.timestampNanoseconds ?? 0) + 1_000_000_000) { coins.append(coin) }
        return (coins, decoder.glitches)
    }

    @Test("clean pulse trains decode to their channels")
    func clean() throws {
        let (coins, glitches) = try decode("pulse-clean.txt")
        #expect(coins.map(\.channel) == [1, 2, 5])
        #expect(coins.allSatisfy { !$0.suspectMerged })
        #expect(glitches == 0)
        #expect(coins[0].firstPulseNanoseconds == 1_000_000_000)  // the kernel's timestamp, not ours
    }

    @Test("contact bounce and static spikes shorter than the minimum pulse are ignored")
    func bounce() throws {
        let (coins, glitches) = try decode("pulse-bounce.txt")
        #expect(coins.map(\.channel) == [5, 3])
        #expect(glitches >= 10)
    }

    @Test("trains that merge are flagged, and the next clean coin decodes")
    func merged() throws {
        let (coins, _) = try decode("pulse-merged.txt")
        #expect(coins.map(\.channel) == [5, 4])
        #expect(coins[0].suspectMerged)
        #expect(!coins[1].suspectMerged)
    }

    @Test("glitches and other lines' edges make no coin")
    func glitches() throws {
        let (coins, glitches) = try decode("pulse-glitches.txt")
        #expect(coins.isEmpty)
        #expect(glitches == 2)
    }

    @Test("a coin ends only after the gap: poll before it returns nothing")
    func gap() throws {
        var decoder = PulseDecoder(settings: .init(line: 4, gapMilliseconds: 150))
        for edge in try edges("pulse-clean.txt").prefix(2) { _ = decoder.feed(edge) }
        let deadline = try #require(decoder.deadline)
        #expect(decoder.poll(now: deadline - 1) == nil)
        #expect(decoder.poll(now: deadline)?.channel == 1)
    }

    @Test("light gates: speed from gate to gate, diameter from occlusion time")
    func lightGates() throws {
        var decoder = LightGateDecoder(settings: .init(gateA: 10, gateB: 11, distanceMM: 50))
        let coins = try edges("lightgate.txt").compactMap { decoder.feed($0) }
        #expect(coins.count == 2)
        #expect(abs(coins[0].diameterMM - 25.0) < 0.01)
        #expect(abs(coins[0].speedMMPerSecond - 2500) < 1)
        #expect(abs(coins[1].diameterMM - 19.05) < 0.01)
        #expect(decoder.glitches == 1)
    }

    @Test("HX711: 24-bit two's complement samples, tare and calibration, saturation refused")
    func hx711() {
        func bits(_ value: Int32) -> [Bool] { (0..<24).reversed().map { (value >> $0) & 1 == 1 } }
        #expect(HX711Decoder.sample(bits: bits(1234)) == 1234)
        #expect(HX711Decoder.sample(bits: bits(-5)) == -5)
        let scale = HX711Decoder(tare: 1000, countsPerGram: 420)
        #expect(abs(scale.grams(bits: bits(1000 + 2381))! - 5.669) < 0.001)
        #expect(scale.grams(bits: bits(0x7F_FFFF)) == nil)
        #expect(scale.grams(bits: [true]) == nil)
    }

    @Test("bad edge streams name the line")
    func badStreams() throws {
        #expect(throws: EdgeStream.ParseError(line: 2, message: "expected '<t_ns> <line> <r|f>', got '5 4 x'")) {
            try EdgeStream.parse("1 4 f\n5 4 x\n")
        }
        #expect(throws: EdgeStream.ParseError(line: 2, message: "time goes backwards")) { try EdgeStream.parse("9 4 f\n5 4 r\n") }
        let edges = [EdgeEvent(timestampNanoseconds: 1, line: 4, rising: false), EdgeEvent(timestampNanoseconds: 2, line: 4, rising: true)]
        #expect(try EdgeStream.parse(EdgeStream.format(edges)) == edges)
    }
}

@Suite("libgpiod and libudev, linked and used behind their seams")
struct HardwareSeamTests {
    @Test("opening a GPIO chip that does not exist is a clear error (this machine has none)")
    func noChip() {
        #expect(throws: GPIOError.chipNotFound("coinmech-no-such-chip", errno: ENOENT)) { try GPIOChip("coinmech-no-such-chip") }
        #expect(GPIOError.chipNotFound("x", errno: ENOENT).description == "GPIO chip 'x' not found: No such file or directory")
    }

    @Test("the udev monitor is set up before enumerating, and enumerates real tty devices")
    func udev() throws {
        let monitor = try UdevMonitor(subsystem: "tty")
        #expect(monitor.descriptor >= 0)
        let devices = monitor.enumerate()
        #expect(!devices.isEmpty)
        #expect(devices.allSatisfy { $0.subsystem == "tty" && $0.action == .add })
        #expect(monitor.receive() == nil)  // nothing pending (no udevd here)
    }

    @Test("hotplug: a recorded event stream of a USB adapter going and coming back")
    func hotplugStream() {
        let adapter: [String: String] = [
            "ID_VENDOR_ID": "0403", "ID_MODEL_ID": "6001", "ID_SERIAL_SHORT": "A10K3",
            "DEVLINKS": "/dev/serial/by-id/usb-FTDI_FT232R_A10K3-if00-port0 /dev/coinmech0",
        ]
        let other: [String: String] = ["ID_VENDOR_ID": "067b", "ID_MODEL_ID": "2303", "DEVLINKS": "/dev/serial/by-id/usb-Prolific-port0"]
        let stream: [DeviceEvent] = [
            DeviceEvent(action: .add, subsystem: "tty", devnode: "/dev/ttyS0"),
            DeviceEvent(action: .add, subsystem: "tty", devnode: "/dev/ttyUSB1", properties: other),
            DeviceEvent(action: .add, subsystem: "tty", devnode: "/dev/ttyUSB0", properties: adapter),
            DeviceEvent(action: .add, subsystem: "tty", devnode: "/dev/ttyUSB0", properties: adapter),  // repeated: no change
            DeviceEvent(action: .remove, subsystem: "tty", devnode: "/dev/ttyUSB1", properties: other),
            DeviceEvent(action: .remove, subsystem: "tty", devnode: "/dev/ttyUSB0", properties: adapter),
            DeviceEvent(action: .add, subsystem: "tty", devnode: "/dev/ttyUSB2", properties: adapter),  // back, renumbered
        ]
        for match in [DeviceMatch.serialPath("/dev/serial/by-id/usb-FTDI_FT232R_A10K3-if00-port0"),
                      .usb(vendor: "0403", product: "6001", serial: "A10K3"), .usb(vendor: "0403", product: "6001", serial: nil)] {
            var tracker = HotplugTracker(match: match)
            #expect(stream.compactMap { tracker.handle($0) } == [
                .appeared(devnode: "/dev/ttyUSB0"), .vanished(devnode: "/dev/ttyUSB0"), .appeared(devnode: "/dev/ttyUSB2"),
            ])
            #expect(tracker.present == "/dev/ttyUSB2")
        }
        var wrongSerial = HotplugTracker(match: .usb(vendor: "0403", product: "6001", serial: "OTHER"))
        #expect(stream.compactMap { wrongSerial.handle($0) }.isEmpty)
        var chip = HotplugTracker(match: .gpioChip(label: "pinctrl-bcm2711"))
        #expect(chip.handle(DeviceEvent(action: .add, subsystem: "gpio", devnode: "/dev/gpiochip0", label: "pinctrl-bcm2711"))
            == .appeared(devnode: "/dev/gpiochip0"))
    }

    @Test("hotplug: a GPIO chip removed and added again, as udev reports gpio-sim's (a removed chip has no label)")
    func hotplugChip() {
        // The legacy sysfs class device has the label but no node; the character device has the
        // node, and its label comes from the chip while it exists, not on removal.
        let stream: [DeviceEvent] = [
            DeviceEvent(action: .add, subsystem: "gpio", devnode: nil, label: "pinctrl-bcm2711"),
            DeviceEvent(action: .add, subsystem: "gpio", devnode: "/dev/gpiochip1", label: "other-chip"),
            DeviceEvent(action: .add, subsystem: "gpio", devnode: "/dev/gpiochip0", label: "pinctrl-bcm2711"),
            DeviceEvent(action: .remove, subsystem: "gpio", devnode: nil),
            DeviceEvent(action: .remove, subsystem: "gpio", devnode: "/dev/gpiochip1"),
            DeviceEvent(action: .remove, subsystem: "gpio", devnode: "/dev/gpiochip0"),
            DeviceEvent(action: .remove, subsystem: "gpio", devnode: "/dev/gpiochip0"),  // repeated: no change
            DeviceEvent(action: .add, subsystem: "gpio", devnode: "/dev/gpiochip2", label: "pinctrl-bcm2711"),  // back, renumbered
            DeviceEvent(action: .remove, subsystem: "tty", devnode: "/dev/gpiochip2"),  // another subsystem
        ]
        var tracker = HotplugTracker(match: .gpioChip(label: "pinctrl-bcm2711"))
        #expect(stream.compactMap { tracker.handle($0) } == [
            .appeared(devnode: "/dev/gpiochip0"), .vanished(devnode: "/dev/gpiochip0"), .appeared(devnode: "/dev/gpiochip2"),
        ])
        #expect(tracker.present == "/dev/gpiochip2")
    }
}

@Suite("channel-map plugin")
struct ChannelMapTests {
    @Test("maps pulse counts to denominations; unknown channels are rejected; readings without a channel pass")
    func channelMap() throws {
        let chain = try TestSupport.chain([LinkSpec(plugin: "channel-map", configJSON: """
            {"currency":"USD","channels":{"1":{"code":"cent","value":1},"2":{"code":"nickel","value":5},"5":{"code":"quarter","value":25}}}
            """)])
        #expect(chain.decide(Reading(deviceSeq: 1, channel: 5)).denomination == Denomination(currency: "USD", code: "quarter", valueMinor: 25))
        #expect(chain.decide(Reading(deviceSeq: 2, channel: 3)).rejection == Rejection(reason: "unknown_channel", message: "pulse count matches no configured channel"))
        #expect(chain.decide(.coin(24.26, 5.67)).linkName == Chain.terminalLinkName)
        #expect(throws: ChainBuildError.self) {
            try TestSupport.chain([LinkSpec(plugin: "channel-map", configJSON: #"{"currency":"USD","channels":{"x":{"code":"a","value":1}}}"#)])
        }
    }
}
