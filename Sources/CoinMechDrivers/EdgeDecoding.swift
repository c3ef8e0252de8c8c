import CoinMechGPIO
import CoinMechSettings
import CoinMechSources

/// How a GPIO mech's edges become coins: counted pulses (a channel per coin) or two light gates
/// (a diameter from the occlusion time).
public enum EdgeDecoding: Sendable, Equatable {
    case pulse(PulseDecoder.Settings)
    case gates(LightGateDecoder.Settings)

    /// A GPIO line's offset on its chip (the kernel's is a 32-bit number; chips have far fewer).
    static let lineOffsets = 0...65_535

    /// A fresh decoder for the mech's edges.
    public var decoder: any CoinDecoder {
        switch self {
        case .pulse(let settings): PulseDecoder(settings: settings)
        case .gates(let settings): LightGateDecoder(settings: settings)
        }
    }

    /// The input lines the decoder reads.
    public var inputLines: [UInt32] {
        switch self {
        case .pulse(let settings): [settings.line]
        case .gates(let settings): [settings.gateA, settings.gateB]
        }
    }

    /// A GPIO source's edge decoding: exactly one of `pulse` or `gates`.
    static func parse(_ sourceTable: SettingsTable, kind: String) throws(SettingsError) -> EdgeDecoding {
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
        switch (pulseSettings, gateSettings) {
        case (let pulse?, nil): return .pulse(pulse)
        case (nil, let gates?): return .gates(gates)
        default: throw sourceTable.error("a \(kind) source needs exactly one of 'pulse' {line: N} or 'gates' {a, b, distance_mm}")
        }
    }
}
