/// What the host asks of an MDB coin changer (address 08h), levels 2 and 3.
public enum MDBChangerCommand: Sendable, Hashable {
    /// 08h: the changer restarts, disables every coin type and reports "changer was reset".
    case reset
    /// 09h: its level, currency, scaling, routing and coin values (`MDBChangerSetup`).
    case setup
    /// 0Ah: which tubes are full and how many coins each holds (`MDBTubeStatus`).
    case tubeStatus
    /// 0Bh: what happened since the last poll (`MDBChangerEvent`s), or ACK for nothing.
    case poll
    /// 0Ch: the coin types it may accept, and those its manual dispense buttons may pay (bit n:
    /// type n). A reset clears the first; send it again after every reset.
    case coinType(accept: UInt16, manualDispense: UInt16)
    /// 0Dh: pay `count` (1 to 15) coins of `type` (0 to 15) from its tube.
    case dispense(type: Int, count: Int)
    /// 0Fh 00h (level 3): manufacturer, serial, model, software and optional features.
    case identification
    /// 0Fh 01h (level 3): switch on these optional features (`MDBChangerIdentity.Features`).
    case featureEnable(UInt32)
    /// 0Fh 02h (level 3, alternative payout): pay this value, in scaled units; the changer chooses the coins.
    case payout(scaledValue: UInt8)
    /// 0Fh 03h (level 3): the coins of each type paid by the last payout (`MDBPayoutStatus`).
    case payoutStatus
    /// 0Fh 04h (level 3): the value paid since the last such poll; ACK alone once the payout is over.
    case payoutValuePoll
    /// 0Fh 05h (level 3, extended diagnostics): its diagnostic status words.
    case diagnostics

    /// The changer's address, in the top five bits of every command byte.
    public static let address: UInt8 = 0x08
    /// Commands by their low three bits.
    static let resetCode: UInt8 = 0
    static let setupCode: UInt8 = 1
    static let tubeStatusCode: UInt8 = 2
    public static let pollCode: UInt8 = 3
    static let coinTypeCode: UInt8 = 4
    public static let dispenseCode: UInt8 = 5
    public static let expansionCode: UInt8 = 7

    /// The bus transaction, or why the command cannot be sent.
    public func transaction() throws(MDBCommandError) -> MDBTransaction {
        let base = Self.address
        switch self {
        case .reset: return MDBTransaction(command: base)
        case .setup: return MDBTransaction(command: base | 1)
        case .tubeStatus: return MDBTransaction(command: base | 2)
        case .poll: return MDBTransaction(command: base | 3)
        case .coinType(let accept, let manual):
            // Most significant byte first: bit 15 is the first byte's top bit.
            return MDBTransaction(command: base | 4, data: [UInt8(accept >> 8), UInt8(accept & 0xFF), UInt8(manual >> 8), UInt8(manual & 0xFF)])
        case .dispense(let type, let count):
            guard (0...15).contains(type) else { throw .coinTypeOutOfRange(type) }
            guard (1...15).contains(count) else { throw .dispenseCountOutOfRange(count) }
            return MDBTransaction(command: base | 5, data: [UInt8(count << 4 | type)])
        case .identification: return MDBTransaction(command: base | 7, data: [0x00])
        case .featureEnable(let features):
            return MDBTransaction(command: base | 7, data: [0x01, UInt8(features >> 24), UInt8(features >> 16 & 0xFF), UInt8(features >> 8 & 0xFF), UInt8(features & 0xFF)])
        case .payout(let value):
            guard value > 0 else { throw .payoutOfNothing }
            return MDBTransaction(command: base | 7, data: [0x02, value])
        case .payoutStatus: return MDBTransaction(command: base | 7, data: [0x03])
        case .payoutValuePoll: return MDBTransaction(command: base | 7, data: [0x04])
        case .diagnostics: return MDBTransaction(command: base | 7, data: [0x05])
        }
    }
}

/// A changer command the bus cannot carry.
public enum MDBCommandError: Error, Sendable, Hashable, CustomStringConvertible {
    case coinTypeOutOfRange(Int)
    case dispenseCountOutOfRange(Int)
    case payoutOfNothing

    public var description: String {
        switch self {
        case .coinTypeOutOfRange(let type): "MDB coin type \(type) does not exist: types are 0 to 15"
        case .dispenseCountOutOfRange(let count): "one MDB DISPENSE pays 1 to 15 coins, not \(count): split the payout into several"
        case .payoutOfNothing: "an MDB PAYOUT of 0 pays nothing: leave it out"
        }
    }
}
