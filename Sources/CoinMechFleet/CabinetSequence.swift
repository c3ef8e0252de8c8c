/// One cabinet's seqs as the fleet holds them (F7, F8): the highest contiguous seq, the seqs
/// stored above it, the ranges the bridge declared missing, and when the first hole appeared.
/// A pure value: the ingest applies a batch to a copy and keeps it only once the batch's
/// transaction has committed.
public struct CabinetSequence: Sendable, Equatable {
    /// Every seq 1 … `contiguous` is stored, or declared missing by the cabinet's bridge.
    public private(set) var contiguous: Int64
    /// Stored seqs above `contiguous`: each one beyond a hole.
    public private(set) var above: Set<Int64> = []
    /// Ranges above `contiguous` the ledger does not hold (the bridge's `missing`).
    public private(set) var missing: [ClosedRange<Int64>] = []
    /// When a hole was first seen below a stored seq, nil while there is none.
    public private(set) var holeSince: Double?
    /// When the next `cmd/resend` for the first hole may go, and the wait after it.
    public private(set) var nextResend: Double?
    private var resendWait: Double = 0
    /// F5: a copy differing from the stored event froze the ack here until an operator looks.
    public private(set) var frozenAt: Int64?

    /// Seqs outside the contract's range (1 … `FleetLimits.maxSeq`: rows a database kept from
    /// before the fleet refused them) are left out, so that no step of this can overflow.
    public init(contiguous: Int64 = 0, above: Set<Int64> = [], missing: [ClosedRange<Int64>] = [], now: Double = 0) {
        self.contiguous = min(max(contiguous, 0), FleetLimits.maxSeq)
        self.above = above.filter { (1...FleetLimits.maxSeq).contains($0) }
        self.missing = missing.compactMap { range in
            let lower = max(range.lowerBound, 1), upper = min(range.upperBound, FleetLimits.maxSeq)
            return lower <= upper ? lower...upper : nil
        }
        advance()
        if firstHole != nil { holeSince = now }
    }

    /// What the ack may say (F6): the contiguous seq, or where a conflict froze it.
    public var ackSeq: Int64 { frozenAt.map { min($0, contiguous) } ?? contiguous }

    /// Whether `seq` is stored or settled already: a copy of it is a duplicate.
    public func holds(_ seq: Int64) -> Bool {
        seq <= contiguous || above.contains(seq) || missing.contains { $0.contains(seq) }
    }

    /// A seq committed. Returns whether `contiguous` moved.
    @discardableResult
    public mutating func stored(_ seq: Int64, now: Double) -> Bool {
        guard (1...FleetLimits.maxSeq).contains(seq), !holds(seq) else { return false }
        let before = contiguous
        above.insert(seq)
        advance()
        settleHole(now: now, progressed: contiguous != before)
        return contiguous != before
    }

    /// The bridge's `missing`: seqs the ledger never had; settled for the ack (F8).
    public mutating func declareMissing(_ range: ClosedRange<Int64>, now: Double) {
        let lower = max(range.lowerBound, contiguous + 1), upper = min(range.upperBound, FleetLimits.maxSeq)
        guard lower <= upper else { return }
        let before = contiguous
        missing.append(lower...upper)
        advance()
        settleHole(now: now, progressed: contiguous != before)
    }

    /// F5: the ack stays at `seq` (the ack before the batch that brought the differing copy).
    public mutating func freeze(at seq: Int64) { if frozenAt == nil { frozenAt = seq } }

    /// An operator acknowledged the conflict.
    public mutating func thaw() { frozenAt = nil }

    /// The first hole: from `contiguous + 1` up to the seq before the lowest one held above it;
    /// nil when nothing is held above `contiguous`.
    public var firstHole: ClosedRange<Int64>? {
        let next = contiguous + 1
        let lowest = [above.min(), missing.map(\.lowerBound).min()].compactMap { $0 }.min()
        guard let lowest, lowest > next else { return nil }
        return next...(lowest - 1)
    }

    /// F8: the hole to ask the bridge for, if it has lasted `grace` and its back-off allows;
    /// the wait then doubles (from `grace`, up to 5 minutes) until the feed moves again.
    public mutating func resendDue(now: Double, grace: Double) -> ClosedRange<Int64>? {
        guard let hole = firstHole, let since = holeSince, now - since >= grace else { return nil }
        if let next = nextResend, now < next { return nil }
        resendWait = resendWait == 0 ? grace : min(resendWait * 2, 300)
        nextResend = now + resendWait
        return hole
    }

    private mutating func advance() {
        // contiguous ≤ maxSeq < Int64.max: `contiguous + 1` cannot overflow.
        while contiguous < FleetLimits.maxSeq {
            let next = contiguous + 1
            if above.remove(next) != nil {
                contiguous = next
            } else if let range = missing.first(where: { $0.contains(next) }) {
                contiguous = range.upperBound
            } else {
                break
            }
        }
        missing.removeAll { $0.upperBound <= contiguous }
        above = above.filter { $0 > contiguous }
    }

    private mutating func settleHole(now: Double, progressed: Bool) {
        if firstHole == nil {
            holeSince = nil
            nextResend = nil
            resendWait = 0
        } else if holeSince == nil || progressed {
            // A new hole, or the feed moved and the next hole shows: its own grace, without the
            // old back-off.
            holeSince = now
            nextResend = nil
            resendWait = 0
        }
    }
}
