/// One MDB bus transaction as the master sends it: the command byte (the peripheral's address
/// in its top five bits, the command in the low three) and its data. The adapter line
/// (`MDBAdapterCommand.transaction`) carries it as ASCII; a raw 9-bit driver would send the
/// command byte with the mode bit set, the data, then `checksum`.
public struct MDBTransaction: Sendable, Hashable, CustomStringConvertible {
    public var command: UInt8
    public var data: [UInt8]

    public init(command: UInt8, data: [UInt8] = []) {
        self.command = command
        self.data = data
    }

    /// The peripheral it addresses: 08h for the coin changer.
    public var address: UInt8 { command & 0xF8 }

    /// The MDB checksum: the sum of the command and data bytes, modulo 256.
    public var checksum: UInt8 { data.reduce(command) { $0 &+ $1 } }

    public var description: String { MDBHex.encode([command] + data) }
}
