/// One event of a coin acceptor's buffer, placed in the device's numbering.
public struct CCTalkBufferedEvent: Sendable, Hashable, CustomStringConvertible {
    /// The device session (see `CCTalkCounterState.epoch`).
    public var epoch: UInt64
    /// Its number in the session, without the counter's wrap: with `epoch`, its identity.
    public var number: UInt64
    /// The device's counter for it (1–255).
    public var counter: UInt8
    public var result: BufferedResult
    /// For a credit: the position's coin id, as the device named it when the host identified it.
    public var coinID: CoinID?

    public init(epoch: UInt64, number: UInt64, result: BufferedResult, coinID: CoinID? = nil) {
        self.epoch = epoch
        self.number = number
        counter = CCTalkCounterState.counter(for: number)
        self.result = result
        self.coinID = coinID
    }

    public var description: String {
        "epoch \(epoch) event \(number) (counter \(counter)): \(result)" + (coinID.map { " \($0)" } ?? "")
    }
}

/// Why the host decided a device had started again.
public enum CCTalkRestartCause: Sendable, Hashable, CustomStringConvertible {
    /// Its counter went back to 0 (power-up or reset, seen as it happened). Events after the
    /// last one read, if there were any, went with its buffer.
    case counterZero
    /// The buffer does not continue the one last recorded, or it starts again from nothing with
    /// the counter gone back: it restarted while nobody polled it. Events of the old session
    /// after the last one recorded are lost with its buffer.
    case bufferRestarted
    /// A device with another serial number answers at the address.
    case otherDevice(previous: UInt32?, now: UInt32?)

    public var description: String {
        switch self {
        case .counterZero: "its event counter went back to 0 (power-up or reset); coins taken since the last read, if any, went with its buffer"
        case .bufferRestarted: "its event buffer started again while it was not being polled: later events of the old session are lost"
        case .otherDevice(let previous, let now):
            "another device answers (serial \(previous.map(String.init) ?? "unknown") before, \(now.map(String.init) ?? "unknown") now)"
        }
    }
}

/// What a ledger must record from a coin acceptor's buffer.
public enum CCTalkLedgerEntry: Sendable, Hashable, CustomStringConvertible {
    /// Money: the acceptor took the coin (it passed its credit sensor). Credit it now, once:
    /// the event's (epoch, number) is its identity.
    case credit(CCTalkBufferedEvent)
    /// An error event (result A = 0): audit, never credit.
    case error(CCTalkBufferedEvent, CoinAcceptorError)
    /// Result A beyond 16: not a position. Audit, never credit.
    case invalid(CCTalkBufferedEvent)
    /// In the buffer when the host first met this device: whoever ran it before handled it.
    /// Recorded for audit, never credited.
    case backlog(CCTalkBufferedEvent)
    /// Events that fell out of the five-deep buffer before the host read them: their numbers
    /// in `epoch`. Coins may have been taken without credit: raise it loudly.
    case lost(epoch: UInt64, numbers: ClosedRange<UInt64>)
    /// The device started again; `epoch` is the new session.
    case restarted(epoch: UInt64, cause: CCTalkRestartCause)

    public var description: String {
        switch self {
        case .credit(let event): "credit: \(event)"
        case .error(let event, let error): "error event: epoch \(event.epoch) event \(event.number): \(error)"
        case .invalid(let event): "invalid event: \(event)"
        case .backlog(let event): "backlog (not credited): \(event)"
        case .lost(let epoch, let numbers):
            "LOST \(numbers.count) event(s) of epoch \(epoch) (\(numbers.lowerBound)…\(numbers.upperBound)): the buffer overran before it was read"
        case .restarted(let epoch, let cause): "device restarted (epoch \(epoch)): \(cause)"
        }
    }
}

/// What one read of the buffer changed: entries to record and the counter state to store with
/// them, in one transaction. `before` is the state the entries follow from: a ledger that
/// holds another state has applied this batch already (or another writer moved it) and must
/// skip it (see `CCTalkHost.rewind(to:)`).
public struct CCTalkLedgerBatch: Sendable, Hashable {
    public var before: CCTalkCounterState?
    public var after: CCTalkCounterState
    /// Oldest first.
    public var entries: [CCTalkLedgerEntry]

    public init(before: CCTalkCounterState?, after: CCTalkCounterState, entries: [CCTalkLedgerEntry]) {
        self.before = before
        self.after = after
        self.entries = entries
    }

    public var credits: [CCTalkBufferedEvent] {
        entries.compactMap { if case .credit(let event) = $0 { event } else { nil } }
    }

    /// Events lost to a buffer overrun in this batch.
    public var lostCount: Int {
        entries.reduce(0) { if case .lost(_, let numbers) = $1 { $0 + numbers.count } else { $0 } }
    }
}
