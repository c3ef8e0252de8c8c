/// The order in which a batch's answers go out, and which accepts can no longer reach the
/// mech in time.
///
/// Answers share one serial line: each waits for those written before it, so their transit
/// adds up (three answers at 9600 baud take about 56 ms). Accepts go first, oldest reading
/// first: a late "return" costs nothing (the mech returns the coin at its deadline anyway), a
/// late accept costs the coin. An accept whose answer would arrive after the mech's deadline —
/// counted from when the reading left the mech — is turned into a return before the commit.
public struct AnswerPlan: Sendable, Equatable {
    /// One answer owed to the mech.
    public struct Answer: Sendable, Equatable {
        /// The reading's index in the batch.
        public var index: Int
        public var accept: Bool
        /// When the reading left the mech (CLOCK_MONOTONIC ns).
        public var sentAt: UInt64
        /// This answer's own time on the line.
        public var transit: UInt64

        public init(index: Int, accept: Bool, sentAt: UInt64, transit: UInt64) {
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
    /// For each written answer, when it reaches the mech at the earliest, by index.
    public private(set) var arrivals: [Int: UInt64]

    /// Plans `answers` to be written once the commit is done, at `now` plus the commit
    /// allowance. Without a deadline, nothing is withdrawn.
    public init(_ answers: [Answer], now: UInt64, deadline: AnswerDeadline?) {
        order = answers.enumerated().sorted { a, b in
            if a.element.accept != b.element.accept { return a.element.accept }
            if a.element.sentAt != b.element.sentAt { return a.element.sentAt < b.element.sentAt }
            return a.offset < b.offset
        }.map(\.element)
        withdrawn = []
        arrivals = [:]
        var onTheLine = now &+ (deadline?.commitAllowanceNanoseconds ?? 0)
        for position in order.indices {
            onTheLine &+= order[position].transit
            arrivals[order[position].index] = onTheLine
            guard let deadline, order[position].accept else { continue }
            if onTheLine > order[position].sentAt &+ deadline.deadlineNanoseconds {
                order[position].accept = false
                withdrawn.insert(order[position].index)
            }
        }
    }

    /// How many milliseconds the commit may wait for the database before the earliest accept
    /// would be late (nil without a deadline or an accept).
    public func commitBudgetMilliseconds(now: UInt64, deadline: AnswerDeadline?) -> Int? {
        guard let deadline else { return nil }
        let slack = order.filter(\.accept).compactMap { answer -> Int64? in
            guard let arrival = arrivals[answer.index] else { return nil }
            return Int64(bitPattern: answer.sentAt &+ deadline.deadlineNanoseconds) - Int64(bitPattern: arrival)
        }.min()
        guard let slack else { return nil }
        return max(1, Int((slack + Int64(deadline.commitAllowanceNanoseconds)) / 1_000_000))
    }
}
