/// What a coin acceptor's host engine reports that the money rules act on (`AcceptorCore`);
/// what only logs and status show stays with the driver.
public enum AcceptorEvent: Sendable, Equatable {
    /// Record these entries and the counter move in one transaction.
    case batch(AcceptorBatch)
    /// Recorded with the next commit: who answered, a fault or its clearing.
    case note(AcceptorRecord)
}
