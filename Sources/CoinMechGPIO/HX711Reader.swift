#if canImport(Glibc)
import Glibc
#endif

/// Reads an HX711 load-cell amplifier by bit-banging its clock and data lines through a
/// `GPIOChip`: waits for data-ready (DOUT low), clocks out 24 bits MSB first plus one pulse for
/// channel A gain 128, and decodes them with `HX711Decoder`. Each clock-high phase stays well
/// under the 60 µs after which the chip powers down.
public final class HX711Reader {
    private let chip: GPIOChip
    public let dataLine: UInt32
    public let clockLine: UInt32
    public let decoder: HX711Decoder

    public init(chip: GPIOChip, data: UInt32, clock: UInt32, decoder: HX711Decoder) throws(GPIOError) {
        self.chip = chip
        dataLine = data
        clockLine = clock
        self.decoder = decoder
        try chip.read(data)
        try chip.drive(clock, initially: false)
    }

    /// Grams now, or nil if the chip is not ready within `timeoutMilliseconds` or the read is bad.
    public func grams(timeoutMilliseconds: Int = 200) -> Double? {
        var waited = 0
        while chip.get(dataLine) != false {
            guard waited < timeoutMilliseconds else { return nil }
            usleep(1000)
            waited += 1
        }
        var bits: [Bool] = []
        bits.reserveCapacity(24)
        for _ in 0..<24 {
            chip.set(clockLine, true)
            chip.set(clockLine, false)
            bits.append(chip.get(dataLine) ?? false)
        }
        chip.set(clockLine, true)  // the 25th pulse: channel A, gain 128 for the next sample
        chip.set(clockLine, false)
        return decoder.grams(bits: bits)
    }
}
