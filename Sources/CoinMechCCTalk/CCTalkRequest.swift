/// A command the host sends a coin acceptor, with its data.
public enum CCTalkRequest: Sendable, Hashable, CustomStringConvertible {
    case simplePoll
    case equipmentCategory
    case manufacturer
    case productCode
    case serialNumber
    case softwareRevision
    case commsRevision
    /// The coin id of position 1–16.
    case coinID(position: Int)
    /// Enables exactly these positions (231).
    case setInhibits(enabled: CoinPositionMask)
    case readInhibits
    /// `accepting: false` is master inhibit: the acceptor returns every coin (228).
    case setMasterInhibit(accepting: Bool)
    case readMasterInhibit
    case selfCheck
    case optoStates
    case reset
    case pollingPriority
    case readBufferedCredit

    public var header: CCTalkHeader {
        switch self {
        case .simplePoll: .simplePoll
        case .equipmentCategory: .requestEquipmentCategory
        case .manufacturer: .requestManufacturerID
        case .productCode: .requestProductCode
        case .serialNumber: .requestSerialNumber
        case .softwareRevision: .requestSoftwareRevision
        case .commsRevision: .requestCommsRevision
        case .coinID: .requestCoinID
        case .setInhibits: .modifyInhibitStatus
        case .readInhibits: .requestInhibitStatus
        case .setMasterInhibit: .modifyMasterInhibitStatus
        case .readMasterInhibit: .requestMasterInhibitStatus
        case .selfCheck: .performSelfCheck
        case .optoStates: .readOptoStates
        case .reset: .resetDevice
        case .pollingPriority: .requestPollingPriority
        case .readBufferedCredit: .readBufferedCredit
        }
    }

    public var data: [UInt8] {
        switch self {
        case .coinID(let position): [UInt8(clamping: position)]
        case .setInhibits(let mask): mask.bytes
        case .setMasterInhibit(let accepting): [accepting ? 1 : 0]
        default: []
        }
    }

    /// Whether sending it twice does no harm (every request but a reset): only these are
    /// retried after a missing reply.
    public var isIdempotent: Bool { self != .reset }

    /// The frame from `host` to `device`.
    public func frame(to device: UInt8, from host: UInt8) -> CCTalkFrame {
        CCTalkFrame(destination: device, source: host, header: header.rawValue, data: data)
    }

    public var description: String {
        switch self {
        case .coinID(let position): "\(header) position \(position)"
        case .setInhibits(let mask): "\(header) enabled \(mask)"
        case .setMasterInhibit(let accepting): "\(header) \(accepting ? "accept" : "inhibit")"
        default: header.description
        }
    }
}
