/// How long the mech waits for an answer before it returns the coin by itself, and how much
/// of that the daemon keeps for committing the decision. The answer's own transit (its bytes
/// on a serial line) counts against the deadline too.
///
/// A coin the mech has given up on must not be credited: an accept decided after
/// `deadline - commitAllowance - transit` is recorded as a `deadline_passed` rejection instead
/// (the mech returns that coin anyway). If a commit itself overruns the allowance, the answer
/// reaches the mech late although the ledger credits the coin: `lateBy` finds those, and
/// the daemon records them as `late_answer` events for the operator to reconcile.
public struct AnswerDeadline: Sendable, Equatable {
    /// The mech's deadline, from the moment the reading arrived.
    public var deadlineNanoseconds: UInt64
    /// Kept free for the commit (an fsync) and the write of the answer.
    public var commitAllowanceNanoseconds: UInt64

    public init(deadlineMilliseconds: Double, commitAllowanceMilliseconds: Double) {
        deadlineNanoseconds = UInt64(deadlineMilliseconds * 1_000_000)
        commitAllowanceNanoseconds = UInt64(commitAllowanceMilliseconds * 1_000_000)
    }

    /// Whether an accept for a reading that arrived at `receivedAt` may still be credited at
    /// `now` (both CLOCK_MONOTONIC nanoseconds), its answer taking `transit` to arrive.
    public func canCredit(receivedAt: UInt64, now: UInt64, transit: UInt64 = 0) -> Bool {
        now &+ commitAllowanceNanoseconds &+ transit <= receivedAt &+ deadlineNanoseconds
    }

    /// How late an answer written at `answeredAt` reaches the mech, or nil if it was in time.
    public func lateBy(receivedAt: UInt64, answeredAt: UInt64, transit: UInt64 = 0) -> UInt64? {
        let due = receivedAt &+ deadlineNanoseconds, arrives = answeredAt &+ transit
        return arrives > due ? arrives - due : nil
    }
}
