/// What one entry of an `append` came to.
public enum EntryOutcome: Sendable, Equatable {
    /// Recorded as these events (a decision credited at once is two: the decision and its coin).
    case recorded([LedgerEvent])
    /// A decision for a coin already on the ledger (same source, epoch and device seq): nothing
    /// recorded; the coin was decided before, with this verdict, and is still `pending` on the
    /// ledger (an accept no confirmation has settled) or not.
    case duplicate(seq: Int64, accepted: Bool, pending: Bool)
    /// A resolution for a coin that was no longer pending: nothing recorded.
    case alreadySettled
}

/// The outcome of an `append`: per entry, and every recorded event in `seq` order.
public struct AppendResult: Sendable {
    public var outcomes: [EntryOutcome]
    public var events: [LedgerEvent]

    public init(outcomes: [EntryOutcome], events: [LedgerEvent]) {
        self.outcomes = outcomes
        self.events = events
    }
}
