/// What a device answered to a request.
public enum CCTalkAnswer: Sendable, Hashable {
    case reply(CCTalkReply)
    /// The device refused the command (header 5).
    case nak
    /// The device is busy (header 6): ask again shortly.
    case busy
}

/// A reply's contents, typed by the request it answers.
public enum CCTalkReply: Sendable, Hashable {
    /// An empty reply: the command was done.
    case ack
    /// Category, manufacturer, product code, software revision: ASCII.
    case text(String)
    /// Header 242: three bytes, least significant first.
    case serialNumber(UInt32)
    /// Header 4: release level, major and minor revision of the specification it follows.
    case commsRevision(release: UInt8, major: UInt8, minor: UInt8)
    case coinID(CoinID)
    /// Header 230: the enabled positions.
    case inhibits(CoinPositionMask)
    /// Header 227: `accepting` false means master inhibit is on.
    case masterInhibit(accepting: Bool)
    /// Header 232: the fault and its optional extra byte.
    case selfCheck(CCTalkFaultCode, extra: UInt8?)
    /// Header 236: one bit per sensor, device-specific.
    case optoStates([UInt8])
    case pollingPriority(PollingPriority)
    case creditBuffer(CreditBuffer)
    /// Header 166: the hopper's event counter and its last payout.
    case hopperStatus(CCTalkHopperStatus)
    /// Header 163: the hopper's fault and status registers.
    case hopperRegisters(CCTalkHopperRegisters)
    /// Header 167: the dispense is taken; newer hoppers add their event counter.
    case dispenseTaken(eventCounter: UInt8?)
    /// Header 172: the coins left unpaid, where the hopper says.
    case stopped(unpaid: UInt8?)
}

/// How often the device asks to be polled (header 249).
public struct PollingPriority: Sendable, Hashable, CustomStringConvertible {
    public var units: UInt8
    public var value: UInt8

    public init(units: UInt8, value: UInt8) {
        self.units = units
        self.value = value
    }

    /// The interval in milliseconds, when the units are a time (1 ms, 2 ×10 ms, 3 s, 4 min,
    /// 5 h); nil for "see the device's documentation" (units 0) or no recommendation (value 0).
    public var milliseconds: Int? {
        guard value > 0 else { return nil }
        let scale: Int? = switch units {
        case 1: 1
        case 2: 10
        case 3: 1_000
        case 4: 60_000
        case 5: 3_600_000
        default: nil
        }
        return scale.map { $0 * Int(value) }
    }

    public var description: String { milliseconds.map { "\($0) ms" } ?? "unspecified (units \(units), value \(value))" }
}

/// A reply that cannot be what the request asked for.
public struct CCTalkReplyError: Error, Sendable, Hashable, CustomStringConvertible {
    public var request: CCTalkHeader
    public var reason: String

    public init(request: CCTalkHeader, reason: String) {
        self.request = request
        self.reason = reason
    }

    public var description: String { "reply to \(request) is malformed: \(reason)" }
}

extension CCTalkRequest {
    /// Reads `frame` as the answer to this request (its addresses already checked).
    public func answer(_ frame: CCTalkFrame) throws(CCTalkReplyError) -> CCTalkAnswer {
        switch frame.header {
        case CCTalkHeader.nak.rawValue: return .nak
        case CCTalkHeader.busy.rawValue: return .busy
        case CCTalkHeader.reply.rawValue: return .reply(try reply(frame.data))
        default: throw CCTalkReplyError(request: header, reason: "header \(frame.header) is not a reply")
        }
    }

    private func reply(_ data: [UInt8]) throws(CCTalkReplyError) -> CCTalkReply {
        func expect(_ counts: ClosedRange<Int>) throws(CCTalkReplyError) {
            guard counts.contains(data.count) else {
                let wanted = counts.count == 1 ? "\(counts.lowerBound)" : "\(counts.lowerBound) to \(counts.upperBound)"
                throw CCTalkReplyError(request: header, reason: "\(data.count) data bytes, expected \(wanted)")
            }
        }
        switch self {
        case .simplePoll, .setInhibits, .setMasterInhibit, .reset, .enableHopper:
            try expect(0...0)
            return .ack
        case .equipmentCategory, .manufacturer, .productCode, .softwareRevision:
            try expect(1...255)
            guard let text = Self.text(data) else {
                throw CCTalkReplyError(request: header, reason: "not text: \(CCTalkFrame.hex(data))")
            }
            return .text(text)
        case .serialNumber:
            try expect(3...3)
            return .serialNumber(UInt32(data[0]) | UInt32(data[1]) << 8 | UInt32(data[2]) << 16)
        case .commsRevision:
            try expect(3...3)
            return .commsRevision(release: data[0], major: data[1], minor: data[2])
        case .coinID, .hopperCoin:
            try expect(6...6)
            guard data.allSatisfy({ (0x20...0x7E).contains($0) }) || data.allSatisfy({ $0 == 0 }) else {
                throw CCTalkReplyError(request: header, reason: "not a coin id: \(CCTalkFrame.hex(data))")
            }
            return .coinID(CoinID(bytes: data))
        case .readInhibits:
            try expect(2...2)
            return .inhibits(CoinPositionMask(bytes: data[0], data[1]))
        case .readMasterInhibit:
            try expect(1...1)
            return .masterInhibit(accepting: data[0] & 1 == 1)
        case .selfCheck:
            try expect(1...2)
            return .selfCheck(CCTalkFaultCode(code: data[0]), extra: data.count == 2 ? data[1] : nil)
        case .optoStates:
            try expect(1...255)
            return .optoStates(data)
        case .pollingPriority:
            try expect(2...2)
            return .pollingPriority(PollingPriority(units: data[0], value: data[1]))
        case .readBufferedCredit:
            guard let buffer = CreditBuffer(bytes: data) else {
                throw CCTalkReplyError(request: header, reason: "\(data.count) data bytes, expected \(CreditBuffer.byteCount)")
            }
            return .creditBuffer(buffer)
        case .hopperStatus:
            try expect(4...4)
            return .hopperStatus(CCTalkHopperStatus(eventCounter: data[0], remaining: data[1], lastPaid: data[2], lastUnpaid: data[3]))
        case .testHopper:
            try expect(1...3)
            return .hopperRegisters(CCTalkHopperRegisters(bytes: data))
        case .dispenseHopperCoins:
            try expect(0...1)
            return .dispenseTaken(eventCounter: data.first)
        case .emergencyStop:
            try expect(0...1)
            return .stopped(unpaid: data.first)
        }
    }

    /// Printable ASCII, trailing blanks and NULs dropped; nil if nothing is left or a byte is
    /// not printable (a reply meant for another request, such as a credit buffer, is not text).
    static func text(_ data: [UInt8]) -> String? {
        var bytes = data
        while let last = bytes.last, last == 0 || last == 0x20 { bytes.removeLast() }
        guard !bytes.isEmpty, bytes.allSatisfy({ (0x20...0x7E).contains($0) }) else { return nil }
        return String(decoding: bytes, as: UTF8.self)
    }
}
