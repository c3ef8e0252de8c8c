/// One cabinet's seqs as the fleet holds them (F7, F8): the highest contiguous seq, the seqs
/// stored above it, the ranges the bridge declared missing, and when the first hole appeared.
/// A pure value: the ingest applies a batch to a copy and keeps it only once the batch's
/// transaction has committed.
///
/// Every step costs O(log n) or a shift of the seqs held above a hole, never a pass over them
/// per event: a cabinet sending every other seq once made each stored seq cost a pass over all
/// the others, and held every other cabinet back. The ingest takes no seq further than
/// `FleetLimits.maxAhead` above `contiguous`, so at most that many are held.
public struct CabinetSequence: Sendable, Equatable {
    /// Every seq 1 … `contiguous` is stored, or declared missing by the cabinet's bridge.
    public private(set) var contiguous: Int64
    /// Stored seqs above `contiguous`, ascending: each one beyond a hole.
    public private(set) var above: [Int64] = []
    /// Ranges above `contiguous` the ledger does not hold (the bridge's `missing`), ascending
    /// and apart.
    public private(set) var missing: [ClosedRange<Int64>] = []
    /// The highest seq heard and not taken (further ahead than the ingest holds): the hole
    /// reaches at least up to it.
    public private(set) var heardBeyond: Int64?
    /// When a hole was first seen below a stored seq, nil while there is none.
    public private(set) var holeSince: Double?
    /// When the next `cmd/resend` for the first hole may go, and the wait after it.
    public private(set) var nextResend: Double?
    private var resendWait: Double = 0
    /// F5: a copy differing from the stored event froze the ack here until an operator looks.
    public private(set) var frozenAt: Int64?

    static let seqs: ClosedRange<Int64> = 1...FleetLimits.maxSeq

    /// Seqs outside the contract's range (1 … `FleetLimits.maxSeq`: rows a database kept from
    /// before the fleet refused them) are left out, so that no step of this can overflow.
    public init(contiguous: Int64 = 0, above: Set<Int64> = [], missing: [ClosedRange<Int64>] = [], now: Double = 0) {
        let start = min(max(contiguous, 0), FleetLimits.maxSeq)
        self.contiguous = start
        self.above = above.filter { $0 > start && Self.seqs.contains($0) }.sorted()
        for range in missing { insertMissing(range) }
        advance()
        if firstHole != nil { holeSince = now }
    }

    /// What the ack may say (F6): the contiguous seq, or where a conflict froze it.
    public var ackSeq: Int64 { frozenAt.map { min($0, contiguous) } ?? contiguous }

    /// Whether `seq` is stored or settled already: a copy of it is a duplicate.
    public func holds(_ seq: Int64) -> Bool {
        seq <= contiguous || Self.contains(above, seq) || missingRange(containing: seq) != nil
    }

    /// A seq committed. Returns whether `contiguous` moved.
    @discardableResult
    public mutating func stored(_ seq: Int64, now: Double) -> Bool {
        guard Self.seqs.contains(seq), !holds(seq) else { return false }
        let before = contiguous
        if seq == contiguous + 1 {
            contiguous = seq
        } else {
            above.insert(seq, at: Self.insertionPoint(above, seq))
        }
        advance()
        settleHole(now: now, progressed: contiguous != before)
        return contiguous != before
    }

    /// The bridge's `missing`: seqs the ledger never had; settled for the ack (F8).
    public mutating func declareMissing(_ range: ClosedRange<Int64>, now: Double) {
        let lower = max(range.lowerBound, contiguous + 1), upper = min(range.upperBound, FleetLimits.maxSeq)
        guard lower <= upper else { return }
        let before = contiguous
        insertMissing(lower...upper)
        advance()
        settleHole(now: now, progressed: contiguous != before)
    }

    /// A seq heard further ahead than the ingest holds: not stored, but the hole below it is
    /// asked for (a fleet database restored from an older backup hears the bridge's newest
    /// events first, crash point 13).
    public mutating func heard(beyond seq: Int64, now: Double) {
        guard Self.seqs.contains(seq), seq > contiguous + 1 else { return }
        heardBeyond = max(heardBeyond ?? 0, seq)
        settleHole(now: now, progressed: false)
    }

    /// F5: the ack stays at `seq` (the ack before the batch that brought the differing copy).
    public mutating func freeze(at seq: Int64) { if frozenAt == nil { frozenAt = seq } }

    /// An operator acknowledged the conflict.
    public mutating func thaw() { frozenAt = nil }

    /// The first hole: from `contiguous + 1` up to the seq before the lowest one held or heard
    /// above it; nil when nothing is held or heard above `contiguous`.
    public var firstHole: ClosedRange<Int64>? {
        let next = contiguous + 1
        let lowest = [above.first, missing.first?.lowerBound, heardBeyond].compactMap { $0 }.min()
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

    /// `contiguous` over every seq held or declared right after it; what it passes is dropped,
    /// in one shift of `above`.
    private mutating func advance() {
        var passed = 0
        while contiguous < FleetLimits.maxSeq {
            let next = contiguous + 1
            if passed < above.count, above[passed] <= next {
                // The next seq, or one inside a range declared missing after it was stored.
                contiguous = max(contiguous, above[passed])
                passed += 1
            } else if let range = missing.first, range.lowerBound <= next {
                contiguous = max(contiguous, range.upperBound)
                missing.removeFirst()
            } else {
                break
            }
        }
        above.removeFirst(passed)
        if let beyond = heardBeyond, beyond <= contiguous + 1 { heardBeyond = nil }
    }

    /// Adds a range to `missing`, merged with those it touches, kept ascending and apart.
    private mutating func insertMissing(_ range: ClosedRange<Int64>) {
        let lower = max(range.lowerBound, 1), upper = min(range.upperBound, FleetLimits.maxSeq)
        guard lower <= upper else { return }
        var merged = lower...upper
        let index = missing.firstIndex { $0.upperBound >= merged.lowerBound - 1 } ?? missing.count
        while index < missing.count, missing[index].lowerBound <= merged.upperBound + 1 {
            merged = min(merged.lowerBound, missing[index].lowerBound)...max(merged.upperBound, missing[index].upperBound)
            missing.remove(at: index)
        }
        missing.insert(merged, at: index)
    }

    private func missingRange(containing seq: Int64) -> ClosedRange<Int64>? {
        var low = 0, high = missing.count
        while low < high {
            let middle = (low + high) / 2
            if missing[middle].upperBound < seq { low = middle + 1 } else { high = middle }
        }
        return low < missing.count && missing[low].contains(seq) ? missing[low] : nil
    }

    /// The index of the first element ≥ `seq` in ascending `seqs`.
    private static func insertionPoint(_ seqs: [Int64], _ seq: Int64) -> Int {
        var low = 0, high = seqs.count
        while low < high {
            let middle = (low + high) / 2
            if seqs[middle] < seq { low = middle + 1 } else { high = middle }
        }
        return low
    }

    private static func contains(_ seqs: [Int64], _ seq: Int64) -> Bool {
        let index = insertionPoint(seqs, seq)
        return index < seqs.count && seqs[index] == seq
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
