import CoinMechModel

/// How long the mech waits for an answer before it returns the coin by itself, counted from
/// when the reading left it, and how much of that the daemon keeps for committing the decision.
/// The answer's own time on the line counts against the deadline too (`LineTiming`).
public struct AnswerDeadline: Sendable, Equatable {
    /// The mech's deadline, from the moment the reading left it.
    public var deadline: Duration
    /// Kept free for the commit (an fsync) and the write of the answer.
    public var commitAllowance: Duration

    public init(deadline: Duration, commitAllowance: Duration) {
        self.deadline = deadline
        self.commitAllowance = commitAllowance
    }

    public init(deadlineMilliseconds: Double, commitAllowanceMilliseconds: Double) {
        self.init(deadline: .nanoseconds(Int64(deadlineMilliseconds * 1e6)), commitAllowance: .nanoseconds(Int64(commitAllowanceMilliseconds * 1e6)))
    }

    /// The last moment an answer may reach the mech for a reading sent at `sentAt`.
    public func due(sentAt: Instant) -> Instant { sentAt + deadline }

    /// How late an answer reaching the mech at `arrivesAt` is, or nil if it was in time.
    public func lateBy(sentAt: Instant, arrivesAt: Instant) -> Duration? {
        arrivesAt > due(sentAt: sentAt) ? arrivesAt - due(sentAt: sentAt) : nil
    }
}
