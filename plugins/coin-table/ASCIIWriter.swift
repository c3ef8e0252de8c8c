/// Appends ASCII to a fixed buffer, truncating, without allocating.
struct ASCIIWriter {
    private let buffer: UnsafeMutableBufferPointer<UInt8>
    private var count = 0

    init(_ buffer: UnsafeMutableBufferPointer<UInt8>) { self.buffer = buffer }

    mutating func append(_ text: StaticString) {
        text.withUTF8Buffer { for byte in $0 { append(byte: byte) } }
    }

    mutating func append(byte: UInt8) {
        guard count < buffer.count - 1 else { return }
        buffer[count] = byte
        count += 1
    }

    mutating func append(integer value: Int) {
        if value < 0 { append(byte: UInt8(ascii: "-")) }
        var magnitude = value.magnitude, divisor: UInt = 1
        while magnitude / divisor >= 10 { divisor *= 10 }
        while divisor > 0 {
            append(byte: UInt8(ascii: "0") + UInt8(magnitude / divisor))
            magnitude %= divisor
            divisor /= 10
        }
    }

    /// A fraction as a percentage with one decimal: 0.0153 → "+1.5 %".
    mutating func append(percent fraction: Double, signed: Bool = true) {
        let tenths = Int((fraction * 1000).rounded())
        if signed || tenths < 0 { append(byte: tenths < 0 ? UInt8(ascii: "-") : UInt8(ascii: "+")) }
        append(integer: abs(tenths) / 10)
        append(byte: UInt8(ascii: "."))
        append(byte: UInt8(ascii: "0") + UInt8(abs(tenths) % 10))
        append(" %")
    }

    /// Ends the text with a NUL.
    mutating func terminate() { buffer[count] = 0 }
}
