import CoinMechModel

/// The order in which a batch's answers go out, and which accepts can no longer reach the
/// mech in time.
///
/// Answers share one serial line: each waits for those written before it, so their transit
/// adds up (three answers at 9600 baud take about 44 ms). Accepts go first, oldest reading
/// first: a late "return" costs nothing (the mech returns the coin at its deadline anyway), a
/// late accept costs the coin. An accept whose answer would arrive after the mech's deadline —
/// counted from when the reading left the mech — is turned into a return before the commit.
public struct AnswerPlan: Sendable, Equatable {
    /// One answer owed to the mech.
    public struct Answer: Sendable, Equatable {
        /// The answer's index in the batch.
        public var index: Int
        public var accept: Bool
        /// When the reading left the mech.
        public var sentAt: Instant
        /// This answer's own time on the line.
        public var transit: Duration

        public init(index: Int, accept: Bool, sentAt: Instant, transit: Duration) {
            self.index = index
            self.accept = accept
            self.sentAt = sentAt
            self.transit = transit
        }
    }

    /// The answers in writing order.
    public private(set) var order: [Answer]
    /// Indices of accepts withdrawn: too late for the mech.
    public private(set) var withdrawn: Set<Int>
    /// For each answer, when it reaches the mech at the earliest, by index.
    public private(set) var arrivals: [Int: Instant]

    /// Plans `answers` to be written once the commit is done, at `now` plus the commit
    /// allowance. Accepts take the line first, oldest reading first; an accept that would arrive
    /// too late is withdrawn and joins the returns at the back, leaving its place on the line to
    /// the accepts behind it. Without a deadline, nothing is withdrawn.
    public init(_ answers: [Answer], now: Instant, deadline: AnswerDeadline?) {
        let accepts = answers.enumerated().filter { $0.element.accept }.sorted {
            $0.element.sentAt != $1.element.sentAt ? $0.element.sentAt < $1.element.sentAt : $0.offset < $1.offset
        }.map(\.element)
        var returns = answers.filter { !$0.accept }
        var sent: [Answer] = []
        withdrawn = []
        arrivals = [:]
        var onTheLine = now + (deadline?.commitAllowance ?? .zero)
        for var answer in accepts {
            let arrival = onTheLine + answer.transit
            if let deadline, arrival > deadline.due(sentAt: answer.sentAt) {
                answer.accept = false
                withdrawn.insert(answer.index)
                returns.append(answer)
                continue
            }
            onTheLine = arrival
            arrivals[answer.index] = arrival
            sent.append(answer)
        }
        for answer in returns {
            onTheLine = onTheLine + answer.transit
            arrivals[answer.index] = onTheLine
        }
        order = sent + returns
    }

    /// How long the commit may wait for the database before the earliest accept would be late
    /// (nil without a deadline or an accept); never less than a millisecond.
    public func commitBudget(deadline: AnswerDeadline?) -> Duration? {
        guard let deadline else { return nil }
        let slack = order.filter(\.accept).compactMap { answer -> Duration? in
            arrivals[answer.index].map { deadline.due(sentAt: answer.sentAt) - $0 }
        }.min()
        guard let slack else { return nil }
        return max(.milliseconds(1), slack + deadline.commitAllowance)
    }
}
