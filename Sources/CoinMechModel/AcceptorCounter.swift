/// Where a coin acceptor's event counter stood when the ledger last recorded its buffer: the
/// `cctalk_counters` row of one device (source and address). The ccTalk host's
/// `CCTalkCounterState` as plain columns; the ledger knows nothing of ccTalk.
public struct AcceptorCounter: Sendable, Hashable {
    public var epoch: UInt64
    /// The last event recorded in `epoch`, unwrapped.
    public var eventNumber: UInt64
    /// The buffer's ten result bytes as last recorded (empty when unknown).
    public var lastResults: [UInt8]
    public var serialNumber: UInt32?
    /// A reset the host sent is under way.
    public var expectsRestart: Bool

    public init(epoch: UInt64, eventNumber: UInt64, lastResults: [UInt8], serialNumber: UInt32?, expectsRestart: Bool) {
        self.epoch = epoch
        self.eventNumber = eventNumber
        self.lastResults = lastResults
        self.serialNumber = serialNumber
        self.expectsRestart = expectsRestart
    }
}

/// A batch's move of one acceptor's counter: it applies only if the row still holds `before`
/// (no row for nil).
public struct AcceptorCounterChange: Sendable, Hashable {
    public var source: String
    public var address: UInt8
    public var before: AcceptorCounter?
    public var after: AcceptorCounter

    public init(source: String, address: UInt8, before: AcceptorCounter?, after: AcceptorCounter) {
        self.source = source
        self.address = address
        self.before = before
        self.after = after
    }
}

/// How a guarded append ended (it either wrote everything or nothing).
public enum AcceptorAppend: Sendable {
    case applied(AppendResult)
    /// The row no longer held the batch's `before` (the batch was applied already, or another
    /// writer moved it): nothing was written; this is what it holds.
    case counterMoved(current: AcceptorCounter?)
}
