/// What a `CCTalkHost` asks its driver to do: write bytes, or take note of an event.
public enum CCTalkHostOutput: Sendable, Hashable {
    /// Write these bytes to the line now (the host already expects their echo).
    case send([UInt8])
    case event(CCTalkHostEvent)
}

/// What happened, typed for the daemon (ledger entries, status, logs).
public enum CCTalkHostEvent: Sendable, Hashable, CustomStringConvertible {
    /// The device answered who it is and which coins it holds.
    case identified(CCTalkDeviceIdentity)
    /// Record these entries and store `after` with them, in one transaction; then nothing else
    /// is needed. If the transaction fails, call `rewind(to:)` with what the ledger holds.
    case batch(CCTalkLedgerBatch)
    /// The device confirmed its inhibit registers: these positions enabled, master inhibit
    /// off (`accepting`) or on.
    case configured(enabled: CoinPositionMask, accepting: Bool)
    /// The self-check reports a fault: the device inhibits itself until it clears. Show it in
    /// `status`.
    case fault(CCTalkFaultCode, extra: UInt8?)
    case faultCleared
    /// No answer to this request after every attempt, `failures` times in a row: the device is
    /// off, unplugged or on another address. Reported once per outage.
    case notResponding(CCTalkRequest, failures: Int)
    /// It answers again.
    case responding
    /// The device refused a request (NAK), or stayed busy past the limit.
    case refused(CCTalkRequest, CCTalkAnswer)
    case malformedReply(CCTalkReplyError)
    /// A stretch of the line that was not a frame (counted in `statistics.line`).
    case lineError(CCTalkLineError)
    /// The device at the address is not a coin acceptor: it is not driven.
    case notACoinAcceptor(category: String)
    /// Another device on the bus answered a request the driver asked for (`ask`), or did not
    /// (nil: no reply after every attempt; a dispense is never sent twice).
    case deviceAnswer(address: UInt8, CCTalkRequest, CCTalkAnswer?)

    public var description: String {
        switch self {
        case .identified(let identity): "identified: \(identity)"
        case .batch(let batch): "batch to \(batch.after): " + batch.entries.map(\.description).joined(separator: "; ")
        case .configured(let enabled, let accepting): "configured: positions \(enabled) enabled, \(accepting ? "accepting" : "master inhibit on")"
        case .fault(let fault, let extra): "FAULT: \(fault)" + (extra.map { " (extra \($0))" } ?? "")
        case .faultCleared: "fault cleared"
        case .notResponding(let request, let failures): "device not responding (\(failures) requests unanswered, last \(request))"
        case .responding: "device responding again"
        case .refused(let request, let answer): "\(request) refused: \(answer)"
        case .malformedReply(let error): error.description
        case .lineError(let error): "line: \(error)"
        case .notACoinAcceptor(let category): "the device is a '\(category)', not a coin acceptor: not driven"
        case .deviceAnswer(let address, let request, let answer): "address \(address): \(request) → \(answer.map { "\($0)" } ?? "no reply")"
        }
    }
}

/// Counts since the host started, for `status`.
public struct CCTalkHostStatistics: Sendable, Hashable, Codable {
    /// Frames written, retries included; buffer polls among them.
    public var requests = 0
    public var polls = 0
    public var replies = 0
    /// Attempts that got no reply in time, and requests given up after every attempt.
    public var timeouts = 0
    public var retries = 0
    public var failures = 0
    public var naks = 0
    public var busies = 0
    public var malformedReplies = 0
    /// Frames not for the host, from another address, or with no request waiting.
    public var unexpectedFrames = 0
    public var line = CCTalkLineCounts()
    public var credits = 0
    public var errorEvents = 0
    public var backlogEvents = 0
    /// Events lost to buffer overruns: must stay 0; raise it loudly.
    public var lostEvents = 0
    public var restarts = 0
    /// Inhibit registers the device had lost and the host put right.
    public var reapplied = 0

    public init() {}
}
