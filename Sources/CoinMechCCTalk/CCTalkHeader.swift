/// The ccTalk headers a coin acceptor and payout hopper host uses, with the specification's
/// names (part 2).
public enum CCTalkHeader: UInt8, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// A reply; with no data it is an ACK.
    case reply = 0
    case resetDevice = 1
    case requestCommsRevision = 4
    /// The device did not accept the command (unknown, bad data, or not now).
    case nak = 5
    /// The device is busy: ask again shortly.
    case busy = 6
    case testHopper = 163
    case enableHopper = 164
    case requestHopperStatus = 166
    case dispenseHopperCoins = 167
    case requestHopperCoin = 171
    case emergencyStop = 172
    case requestCoinID = 184
    case modifyMasterInhibitStatus = 228
    case requestMasterInhibitStatus = 227
    case readBufferedCredit = 229
    case requestInhibitStatus = 230
    case modifyInhibitStatus = 231
    case performSelfCheck = 232
    case readOptoStates = 236
    case requestSoftwareRevision = 241
    case requestSerialNumber = 242
    case requestProductCode = 244
    case requestEquipmentCategory = 245
    case requestManufacturerID = 246
    case requestPollingPriority = 249
    case simplePoll = 254

    /// The specification's name for the header.
    public var name: String {
        switch self {
        case .reply: "Reply / ACK"
        case .resetDevice: "Reset device"
        case .requestCommsRevision: "Request comms revision"
        case .nak: "NAK"
        case .busy: "BUSY"
        case .testHopper: "Test hopper"
        case .enableHopper: "Enable hopper"
        case .requestHopperStatus: "Request hopper status"
        case .dispenseHopperCoins: "Dispense hopper coins"
        case .requestHopperCoin: "Request hopper coin"
        case .emergencyStop: "Emergency stop"
        case .requestCoinID: "Request coin id"
        case .modifyMasterInhibitStatus: "Modify master inhibit status"
        case .requestMasterInhibitStatus: "Request master inhibit status"
        case .readBufferedCredit: "Read buffered credit or error codes"
        case .requestInhibitStatus: "Request inhibit status"
        case .modifyInhibitStatus: "Modify inhibit status"
        case .performSelfCheck: "Perform self-check"
        case .readOptoStates: "Read opto states"
        case .requestSoftwareRevision: "Request software revision"
        case .requestSerialNumber: "Request serial number"
        case .requestProductCode: "Request product code"
        case .requestEquipmentCategory: "Request equipment category id"
        case .requestManufacturerID: "Request manufacturer id"
        case .requestPollingPriority: "Request polling priority"
        case .simplePoll: "Simple poll"
        }
    }

    public var description: String { "\(rawValue) (\(name))" }
}
