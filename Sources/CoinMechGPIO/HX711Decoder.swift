/// Reads an HX711 load-cell amplifier's 24-bit sample from bits clocked out of its data line
/// (the host pulses the clock line 25 times: 24 data bits, MSB first, plus one to select
/// channel A gain 128). Pure: bits in, grams out.
public struct HX711Decoder: Sendable, Hashable {
    /// Raw reading of the empty scale.
    public var tare: Int32
    /// Raw counts per gram, from a calibration with a known weight.
    public var countsPerGram: Double

    public init(tare: Int32, countsPerGram: Double) {
        self.tare = tare
        self.countsPerGram = countsPerGram
    }

    /// The signed 24-bit sample from 24 data bits (true = 1), most significant first.
    public static func sample(bits: [Bool]) -> Int32? {
        guard bits.count == 24 else { return nil }
        var value: Int32 = 0
        for bit in bits { value = value << 1 | (bit ? 1 : 0) }
        // Sign-extend from 24 bits.
        return (value << 8) >> 8
    }

    /// Grams for the sample in `bits`; nil for a malformed or saturated read.
    public func grams(bits: [Bool]) -> Double? {
        guard let raw = Self.sample(bits: bits), raw != 0x7F_FFFF, raw != -0x80_0000 else { return nil }
        return Double(raw - tare) / countsPerGram
    }
}
