import CoinMechFleet
import Testing

/// The fleet's per-cabinet seqs (docs/FLEET.md F7, F8): the contiguous seq the ack says, holes
/// asked for after their grace with back-off, ranges the bridge declared missing, and F5's hold.
@Suite("Cabinet sequence: the ack never passes a hole; a hole is asked for after its grace, with back-off")
struct CabinetSequenceTests {
    @Test("seqs in order move the contiguous seq; a copy of a stored one moves nothing")
    func inOrder() {
        var s = CabinetSequence()
        let moved = [s.stored(1, now: 0), s.stored(2, now: 0), s.stored(3, now: 0)]
        #expect(moved == [true, true, true])
        #expect(s.contiguous == 3 && s.ackSeq == 3 && s.firstHole == nil)
        let again = s.stored(2, now: 1)
        #expect(!again, "a duplicate")
        #expect(s.holds(3) && !s.holds(4))
    }

    @Test("a seq beyond a hole is held above it; the ack stays below the hole until it fills")
    func hole() {
        var s = CabinetSequence()
        s.stored(1, now: 0)
        let moved = [s.stored(4, now: 0), s.stored(5, now: 0)]
        #expect(moved == [false, false])
        #expect(s.contiguous == 1 && s.ackSeq == 1)
        #expect(s.firstHole == 2...3)
        s.stored(3, now: 1)
        #expect(s.firstHole == 2...2 && s.contiguous == 1)
        let filled = s.stored(2, now: 2)
        #expect(filled)
        #expect(s.contiguous == 5 && s.firstHole == nil && s.holeSince == nil)
    }

    @Test("a hole is asked for once its grace has passed, then after 2×, 4× … up to 5 minutes, and at once again after progress")
    func backOff() {
        var s = CabinetSequence()
        s.stored(1, now: 100)
        s.stored(3, now: 100)
        let asked = [129.0, 130, 159, 160, 219, 220].map { s.resendDue(now: $0, grace: 30) }
        // Inside the grace; at its end; 30 s later; then 60 s later.
        #expect(asked == [nil, 2...2, nil, 2...2, nil, 2...2])
        var waits: [Double] = []
        var now = 220.0
        for _ in 0..<6 {
            var next = now + 1
            while s.resendDue(now: next, grace: 30) == nil { next += 1 }
            waits.append(next - now)
            now = next
        }
        #expect(waits == [120, 240, 300, 300, 300, 300])
        // The hole fills; a later one opens: its own grace, without the old back-off.
        s.stored(2, now: now + 1)
        s.stored(5, now: now + 2)
        #expect(s.contiguous == 3 && s.firstHole == 4...4)
        let next = [now + 31, now + 32].map { s.resendDue(now: $0, grace: 30) }
        #expect(next == [nil, 4...4])
    }

    @Test("ranges the bridge declares missing are settled for the ack, and a copy inside them is a duplicate")
    func missing() {
        var s = CabinetSequence()
        s.stored(1, now: 0)
        s.stored(10, now: 0)
        s.declareMissing(2...9, now: 1)
        #expect(s.contiguous == 10 && s.firstHole == nil)
        var t = CabinetSequence()
        t.stored(1, now: 0)
        t.declareMissing(5...6, now: 0)
        #expect(t.contiguous == 1 && t.firstHole == 2...4 && t.holds(5) && !t.holds(4))
        t.stored(2, now: 0); t.stored(3, now: 0); t.stored(4, now: 0)
        #expect(t.contiguous == 6)
        t.stored(7, now: 0)
        #expect(t.contiguous == 7 && t.missing.isEmpty)
    }

    @Test("loaded from the database, a cabinet with seqs above its contiguous one starts its hole's grace at the load")
    func loaded() {
        var s = CabinetSequence(contiguous: 10, above: [12, 13], missing: [], now: 500)
        #expect(s.firstHole == 11...11 && s.holeSince == 500)
        let asked = [529.0, 530].map { s.resendDue(now: $0, grace: 30) }
        #expect(asked == [nil, 11...11])
        let caughtUp = CabinetSequence(contiguous: 10, above: [11, 12], missing: [], now: 500)
        #expect(caughtUp.contiguous == 12 && caughtUp.firstHole == nil)
    }

    @Test("after progress, a hole still open gets a grace of its own: not asked for at once")
    func nextHoleGrace() {
        var s = CabinetSequence()
        s.stored(1, now: 0)
        s.stored(3, now: 0)
        s.stored(5, now: 0)
        #expect(s.resendDue(now: 30, grace: 30) == 2...2)
        s.stored(2, now: 40)
        #expect(s.firstHole == 4...4)
        let asked = [69.0, 70].map { s.resendDue(now: $0, grace: 30) }
        #expect(asked == [nil, 4...4])
    }

    @Test("no seq can make it overflow: Int64.max stored, or loaded from a database that kept it, and every hole below it declared missing")
    func noOverflow() {
        var s = CabinetSequence()
        let beyond = s.stored(.max, now: 0)
        #expect(!beyond, "beyond the contract: not held")
        s.stored(FleetLimits.maxSeq, now: 0)
        s.declareMissing(1...(Int64.max - 1), now: 1)
        #expect(s.contiguous == FleetLimits.maxSeq && s.firstHole == nil)
        // A database from before the fleet refused such seqs.
        var loaded = CabinetSequence(contiguous: 0, above: [.max, FleetLimits.maxSeq], missing: [1...(Int64.max - 1)], now: 0)
        #expect(loaded.contiguous == FleetLimits.maxSeq && loaded.firstHole == nil)
        let again = loaded.stored(.max, now: 2)
        #expect(!again)
        let atEnd = CabinetSequence(contiguous: .max, now: 0)
        #expect(atEnd.contiguous == FleetLimits.maxSeq)
    }

    @Test("a seq heard beyond the window is not held, but the hole below it is asked for, and it is forgotten once the feed passes it")
    func heardBeyond() {
        var s = CabinetSequence(contiguous: 10)
        s.heard(beyond: 50_000, now: 5)
        #expect(s.above.isEmpty && s.firstHole == 11...49_999 && s.holeSince == 5)
        s.declareMissing(11...50_000, now: 6)
        #expect(s.contiguous == 50_000 && s.firstHole == nil && s.heardBeyond == nil)
    }

    @Test("every other seq of 20,000: held in order above the hole; filling the hole carries the contiguous seq over them all at once")
    func sparse() {
        var s = CabinetSequence()
        for seq in stride(from: Int64(2), through: 20_000, by: 2) { s.stored(seq, now: 0) }
        #expect(s.contiguous == 0 && s.above.count == 10_000 && s.firstHole == 1...1)
        #expect(s.above == Array(stride(from: Int64(2), through: 20_000, by: 2)))
        for seq in stride(from: Int64(1), through: 19_999, by: 2) { s.stored(seq, now: 1) }
        #expect(s.contiguous == 20_000 && s.above.isEmpty && s.firstHole == nil)
    }

    @Test("missing ranges are merged; a seq stored inside one declared later is passed over")
    func mergedMissing() {
        var s = CabinetSequence()
        s.stored(8, now: 0)
        s.declareMissing(5...6, now: 0)
        s.declareMissing(3...4, now: 0)
        s.declareMissing(6...9, now: 0)
        #expect(s.missing == [3...9] && s.firstHole == 1...2)
        s.stored(1, now: 1)
        s.stored(2, now: 1)
        #expect(s.contiguous == 9 && s.missing.isEmpty && s.above.isEmpty)
    }

    @Test("F5: a conflict holds the ack where it was while the contiguous seq moves on; thawed, the ack catches up")
    func frozen() {
        var s = CabinetSequence(contiguous: 4)
        s.freeze(at: 4)
        s.stored(5, now: 0)
        s.stored(6, now: 0)
        #expect(s.contiguous == 6 && s.ackSeq == 4)
        s.thaw()
        #expect(s.ackSeq == 6)
    }
}

@Suite("Ack pacing (F6): after every commit, duplicates too, at most one per cabinet per interval, the last always sent")
struct AckPacerTests {
    @Test("commits inside the interval are folded into one ack with the latest seq, sent when the interval has passed")
    func paced() {
        var p = AckPacer()
        p.committed(cabinet: "c-1", site: "s", seq: 5)
        #expect(p.due(now: 10, interval: 1).map(\.seq) == [5])
        p.committed(cabinet: "c-1", site: "s", seq: 6)
        p.committed(cabinet: "c-1", site: "s", seq: 7)
        #expect(p.due(now: 10.5, interval: 1).isEmpty)
        #expect(p.due(now: 11, interval: 1).map(\.seq) == [7], "the last is always sent")
        #expect(p.due(now: 20, interval: 1).isEmpty && p.isEmpty)
    }

    @Test("a commit of duplicates only still acks (a bridge resending only duplicates must hear one)")
    func duplicatesAck() {
        var p = AckPacer()
        p.committed(cabinet: "c-1", site: "s", seq: 9)
        _ = p.due(now: 0, interval: 1)
        p.committed(cabinet: "c-1", site: "s", seq: 9)
        #expect(p.due(now: 2, interval: 1).map(\.seq) == [9])
    }

    @Test("a cabinet coming online is acked at once; an ack that could not be published is tried again")
    func onlineAndUnsent() {
        var p = AckPacer()
        p.committed(cabinet: "c-1", site: "s", seq: 3)
        _ = p.due(now: 0, interval: 1)
        p.now(cabinet: "c-1", site: "s", seq: 3)
        let sent = p.due(now: 0.1, interval: 1)
        #expect(sent.map(\.seq) == [3])
        p.unsent(sent[0])
        #expect(p.due(now: 0.2, interval: 1).map(\.seq) == [3])
        p.committed(cabinet: "c-2", site: "t", seq: 1)
        p.committed(cabinet: "c-3", site: "t", seq: 2)
        #expect(p.due(now: 5, interval: 1).map(\.cabinet) == ["c-2", "c-3"])
    }
}
