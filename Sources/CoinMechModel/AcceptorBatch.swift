/// What one read of a coin acceptor's event buffer changed, in the terms the money rules need
/// (its driver translates its own protocol's batch): the entries in order, and the counter
/// move they follow from, to record in one transaction. A ledger holding another `before` has
/// applied the batch already, or another writer moved it.
public struct AcceptorBatch: Sendable, Equatable {
    public enum Entry: Sendable, Equatable {
        /// Money: the acceptor took the coin. The chain is asked about it; it is credited once.
        case credit(AcceptorCredit)
        /// Audit, never credit: an error, invalid or backlog event, events lost, a restart.
        case record(AcceptorRecord)
    }

    public var before: AcceptorCounter?
    public var after: AcceptorCounter
    /// Oldest first.
    public var entries: [Entry]

    public init(before: AcceptorCounter?, after: AcceptorCounter, entries: [Entry]) {
        self.before = before
        self.after = after
        self.entries = entries
    }

    /// Whether it holds money (a credit): the failpoints of the money path fire only then.
    public var hasCredits: Bool {
        entries.contains { if case .credit = $0 { true } else { false } }
    }
}

/// A coin an acceptor took: its identity in the device's numbering, and what it says of it.
public struct AcceptorCredit: Sendable, Hashable {
    public var epoch: UInt64
    public var number: UInt64
    /// The coin position (1–16) that recognised it.
    public var position: Int
    /// The position's coin id, as the device named it.
    public var coinID: String?
    public var sorterPath: UInt8
    /// Where the device put it, where it says (an MDB changer: `tube` or `cash_box`).
    public var routing: String?

    public init(epoch: UInt64, number: UInt64, position: Int, coinID: String?, sorterPath: UInt8, routing: String? = nil) {
        self.epoch = epoch
        self.number = number
        self.position = position
        self.coinID = coinID
        self.sorterPath = sorterPath
        self.routing = routing
    }
}
