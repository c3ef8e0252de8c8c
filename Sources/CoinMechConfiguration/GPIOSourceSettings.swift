import CoinMechGPIO
import CoinMechHotplug
import CoinMechSettings

extension SourceConfiguration {
    /// A GPIO line's offset on its chip (the kernel's is a 32-bit number; chips have far fewer).
    static let lineOffsets = 0...65_535

    /// Reads a `kind: gpio` or `kind: gpio-replay` source table: the chip (or the recorded
    /// file and its speed), how edges become coins (`pulse` or `gates`), and a gpio mech's
    /// scale, accept gate and inhibit line.
    static func gpio(_ sourceTable: SettingsTable, kindName: String, resolve: (String) -> String) throws(SettingsError) -> (Kind, DeviceMatch?) {
        let key = kindName == "gpio" ? "chip" : "file"
        guard let device = try sourceTable.string(key), !device.isEmpty else { throw sourceTable.error(key, "is required for kind \(kindName)") }
        for key in ["confirmations", "confirm_window_ms"] where sourceTable.keys.contains(key) {
            throw sourceTable.error(key, "applies to serial mechs only: a GPIO mech's coin is credited with its answer")
        }
        var pulseSettings: PulseDecoder.Settings?
        var gateSettings: LightGateDecoder.Settings?
        if let pulse = try sourceTable.table("pulse") {
            try pulse.rejectUnknownKeys(["line", "active_low", "min_pulse_ms", "gap_ms", "highest_channel"])
            guard let line = try pulse.int("line", in: lineOffsets) else { throw pulse.error("line", "is required: the counting line's offset") }
            pulseSettings = PulseDecoder.Settings(
                line: UInt32(line), activeLow: try pulse.bool("active_low") ?? true,
                minimumPulseMilliseconds: try pulse.double("min_pulse_ms", in: 0...1_000) ?? 10, gapMilliseconds: try pulse.double("gap_ms", in: 1...10_000) ?? 150,
                highestChannel: UInt32(try pulse.int("highest_channel", in: 1...255) ?? 16))
        }
        if let gates = try sourceTable.table("gates") {
            try gates.rejectUnknownKeys(["a", "b", "distance_mm", "active_low", "min_occlusion_ms"])
            guard let a = try gates.int("a", in: lineOffsets), let b = try gates.int("b", in: lineOffsets), a != b else {
                throw gates.error("a and b, the two gates' line offsets, are required and must differ")
            }
            guard let distance = try gates.double("distance_mm"), distance > 0 else { throw gates.error("distance_mm", "is required and must be positive") }
            gateSettings = LightGateDecoder.Settings(
                gateA: UInt32(a), gateB: UInt32(b), distanceMM: distance, activeLow: try gates.bool("active_low") ?? true,
                minimumOcclusionMilliseconds: try gates.double("min_occlusion_ms", in: 0...1_000) ?? 0.5)
        }
        let decoding: Decoding
        switch (pulseSettings, gateSettings) {
        case (let pulse?, nil): decoding = .pulse(pulse)
        case (nil, let gates?): decoding = .gates(gates)
        default: throw sourceTable.error("a \(kindName) source needs exactly one of 'pulse' {line: N} or 'gates' {a, b, distance_mm}")
        }
        if kindName == "gpio-replay" {
            var speed = 1.0
            if let configured = try sourceTable.double("speed") {
                guard configured > 0, configured <= 1000 else { throw sourceTable.error("speed", "must be above 0 and at most 1000") }
                speed = configured
            }
            return (.gpioReplay(Replay(file: resolve(device), speed: speed, decoding: decoding)), nil)
        } else {
            var gpio = GPIO(chip: device, decoding: decoding)
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
            return (.gpio(gpio), .gpioChip(label: device))
        }
    }
}
