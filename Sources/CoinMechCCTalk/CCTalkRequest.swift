/// A command the host sends a coin acceptor or a payout hopper, with its data.
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
    /// A hopper's payout enabled (164 with A5h) or disabled (any other byte).
    case enableHopper(Bool)
    /// A hopper's three fault and status registers (163).
    case testHopper
    /// A hopper's event counter and its last payout (166).
    case hopperStatus
    /// Pays `count` coins (167). The plain variant sends the count alone; the serial-number
    /// variant sends the hopper's serial number (least significant byte first) before it.
    /// The encrypted variants need a vendor's cipher key and are not supported.
    case dispenseHopperCoins(count: UInt8, serialNumber: UInt32?)
    /// The coin id a hopper pays (171).
    case hopperCoin
    /// Stops a payout at once (172); the hopper answers the coins left unpaid.
    case emergencyStop

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
        case .enableHopper: .enableHopper
        case .testHopper: .testHopper
        case .hopperStatus: .requestHopperStatus
        case .dispenseHopperCoins: .dispenseHopperCoins
        case .hopperCoin: .requestHopperCoin
        case .emergencyStop: .emergencyStop
        }
    }

    public var data: [UInt8] {
        switch self {
        case .coinID(let position): [UInt8(clamping: position)]
        case .setInhibits(let mask): mask.bytes
        case .setMasterInhibit(let accepting): [accepting ? 1 : 0]
        case .enableHopper(let on): [on ? 0xA5 : 0x00]
        case .dispenseHopperCoins(let count, let serial?): [UInt8(serial & 0xFF), UInt8(serial >> 8 & 0xFF), UInt8(serial >> 16 & 0xFF), count]
        case .dispenseHopperCoins(let count, nil): [count]
        default: []
        }
    }

    /// Whether sending it twice does no harm (every request but a reset and a dispense): only
    /// these are retried after a missing reply. A dispense whose reply is lost is never sent
    /// again: the hopper's event counter (166) says whether it was taken.
    public var isIdempotent: Bool {
        switch self {
        case .reset, .dispenseHopperCoins: false
        default: true
        }
    }

    /// The frame from `host` to `device`.
    public func frame(to device: UInt8, from host: UInt8) -> CCTalkFrame {
        CCTalkFrame(destination: device, source: host, header: header.rawValue, data: data)
    }

    public var description: String {
        switch self {
        case .coinID(let position): "\(header) position \(position)"
        case .setInhibits(let mask): "\(header) enabled \(mask)"
        case .setMasterInhibit(let accepting): "\(header) \(accepting ? "accept" : "inhibit")"
        case .enableHopper(let on): "\(header) \(on ? "enable" : "disable")"
        case .dispenseHopperCoins(let count, let serial): "\(header) \(count) coin(s)\(serial == nil ? "" : " (serial-number variant)")"
        default: header.description
        }
    }
}
