import CoinMechGPIO
import CoinMechHotplug
import CoinMechModel
import CoinMechSettings
import CoinMechSources

/// A pulse or light-gate mech on GPIO lines through libgpiod: a pulse train is the mech's own
/// report of a coin it took (a channel), two light gates measure its diameter, an HX711 load
/// cell its weight; an accept gate and an inhibit line go back to it.
public enum GPIODriver: MechDriver {
    public static let kind = "gpio"
    public static let capabilities: MechCapabilities = [.measures, .classifiesItself, .teachable]
    public static let keys = ["chip", "pulse", "gates", "scale", "accept_gate", "inhibit"]
    public static let simulator = "gpio-sim driven by coinsim edges (make test-vm); coinsim edges for gpio-replay here"

    /// An output line: the accept gate (pulsed) or the inhibit line (held).
    public struct Output: Sendable, Equatable {
        public var line: UInt32
        public var pulseMilliseconds: Double
        public var activeLow: Bool
    }

    public struct Scale: Sendable, Equatable {
        public var data: UInt32
        public var clock: UInt32
        public var decoder: HX711Decoder
    }

    public struct Settings: MechSettings, Equatable {
        public var chip: String
        public var decoding: EdgeDecoding
        public var acceptGate: Output?
        public var inhibit: Output?
        /// An HX711 load cell under a light-gate mech.
        public var scale: Scale?

        public init(chip: String, decoding: EdgeDecoding) {
            self.chip = chip
            self.decoding = decoding
        }

        public var device: String { chip }
        public var hotplug: DeviceMatch? { .gpioChip(label: chip) }
        public var capabilities: MechCapabilities {
            if case .pulse = decoding { return [.classifiesItself] }
            return scale == nil ? [.measures] : [.measures, .teachable]
        }
        /// A pulse is the mech's own report of a coin it took; a light gate has no cash-box sensor (yet).
        public var credit: CreditRule { .atOnce }
        public var unteachable: String? {
            if case .pulse = decoding { return "a pulse mech reports channels, not measurements: there is nothing to teach" }
            return scale == nil ? "this light-gate mech has no scale: teach mode needs a diameter and a weight" : nil
        }

        public func make(_ context: MechContext) -> any Mech {
            let input = GPIOEdgeInput(
                chip: chip, lines: decoding.inputLines, acceptGate: acceptGate.map { ($0.line, $0.pulseMilliseconds) },
                inhibit: inhibit.map { ($0.line, $0.activeLow) }, scale: scale.map { ($0.data, $0.clock, $0.decoder) })
            return GPIOMech(input: input, decoder: decoding.decoder, lastDeviceSeq: context.lastDeviceSeq)
        }
    }

    /// chip, `pulse` or `gates`, and optionally `scale`, `accept_gate` and `inhibit`.
    public static func parse(_ sourceTable: SettingsTable, resolve: (String) -> String) throws(SettingsError) -> Settings {
        guard let device = try sourceTable.string("chip"), !device.isEmpty else { throw sourceTable.error("chip", "is required for kind \(kind)") }
        var gpio = Settings(chip: device, decoding: try EdgeDecoding.parse(sourceTable, kind: kind))
        let lineOffsets = EdgeDecoding.lineOffsets
        if let scale = try sourceTable.table("scale") {
            try scale.rejectUnknownKeys(["data", "clock", "tare", "counts_per_gram"])
            guard let data = try scale.int("data", in: lineOffsets), let clock = try scale.int("clock", in: lineOffsets),
                  let perGram = try scale.double("counts_per_gram"), perGram != 0 else {
                throw scale.error("data, clock and counts_per_gram (from a calibration) are required")
            }
            gpio.scale = Scale(data: UInt32(data), clock: UInt32(clock),
                               decoder: HX711Decoder(tare: Int32(clamping: try scale.int("tare") ?? 0), countsPerGram: perGram))
        }
        if let gate = try sourceTable.table("accept_gate") {
            try gate.rejectUnknownKeys(["line", "pulse_ms"])
            guard let line = try gate.int("line", in: lineOffsets) else { throw gate.error("line", "is required") }
            gpio.acceptGate = Output(line: UInt32(line), pulseMilliseconds: try gate.double("pulse_ms", in: 1...10_000) ?? 80, activeLow: false)
        }
        if let inhibit = try sourceTable.table("inhibit") {
            try inhibit.rejectUnknownKeys(["line", "active_low"])
            guard let line = try inhibit.int("line", in: lineOffsets) else { throw inhibit.error("line", "is required") }
            gpio.inhibit = Output(line: UInt32(line), pulseMilliseconds: 0, activeLow: try inhibit.bool("active_low") ?? false)
        }
        return gpio
    }
}
