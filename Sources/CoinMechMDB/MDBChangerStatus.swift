/// A status a changer reports in a POLL reply (a byte `0000xxxx`).
public enum MDBChangerStatus: UInt8, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    case escrowRequest = 0x01
    case payoutBusy = 0x02
    case noCredit = 0x03
    case defectiveTubeSensor = 0x04
    case doubleArrival = 0x05
    case acceptorUnplugged = 0x06
    case tubeJam = 0x07
    case romChecksumError = 0x08
    case coinRoutingError = 0x09
    case changerBusy = 0x0A
    case changerWasReset = 0x0B
    case coinJam = 0x0C
    case possibleCreditedCoinRemoval = 0x0D

    public var description: String {
        switch self {
        case .escrowRequest: "escrow request"
        case .payoutBusy: "changer payout busy"
        case .noCredit: "no credit (a coin failed to reach the cash box or a tube)"
        case .defectiveTubeSensor: "defective tube sensor"
        case .doubleArrival: "double arrival"
        case .acceptorUnplugged: "acceptor unplugged"
        case .tubeJam: "tube jam"
        case .romChecksumError: "ROM checksum error"
        case .coinRoutingError: "coin routing error"
        case .changerBusy: "changer busy"
        case .changerWasReset: "changer was reset"
        case .coinJam: "coin jam"
        case .possibleCreditedCoinRemoval: "possible credited coin removal"
        }
    }
}
