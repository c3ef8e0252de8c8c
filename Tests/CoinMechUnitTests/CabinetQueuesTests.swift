@testable import CoinMechFleet
import Testing

/// The ingest's queues (docs/FLEET.md, "What a cabinet cannot do to the fleet"): each cabinet's
/// events in order, batches taken in turn, a flood shed at its own queue's bound.
@Suite("Cabinet queues: one event of each cabinet in turn, each cabinet's in order, a flood shed at its own bound")
struct CabinetQueuesTests {
    static func event(_ cabinet: String, _ seq: Int64, bytes: Int = 10) -> FleetMessage.Event {
        FleetMessage.Event(cabinet: cabinet, site: "s", seq: seq, kind: "decision", time: 1, json: String(repeating: "x", count: bytes), published: nil)
    }

    @Test("a cabinet with 5,000 queued events and one with 3: the next batch holds all 3 of the second, the first's in order")
    func turns() {
        var queues = CabinetQueues(perCabinet: 10_000, perCabinetBytes: 1 << 30)
        for seq in Int64(1)...5000 {
            let taken = queues.append(Self.event("flood", seq))
            #expect(taken)
        }
        for seq in Int64(1)...3 {
            let taken = queues.append(Self.event("honest", seq))
            #expect(taken)
        }
        let batch = queues.batch(max: 100)
        #expect(batch.count == 100)
        #expect(batch.filter { $0.cabinet == "honest" }.map(\.seq) == [1, 2, 3])
        #expect(batch.filter { $0.cabinet == "flood" }.map(\.seq) == Array(1...97))
        #expect(queues.count == 4903)
        var seqs: [Int64] = batch.filter { $0.cabinet == "flood" }.map(\.seq)
        while !queues.isEmpty { seqs += queues.batch(max: 1000).map(\.seq) }
        #expect(seqs == Array(1...5000), "in order, once each")
        #expect(queues.bytes == 0)
    }

    @Test("a cabinet's queue is bounded by count and by bytes; what comes beyond is shed and the others are unaffected")
    func shed() {
        var queues = CabinetQueues(perCabinet: 100, perCabinetBytes: 1000)
        let counted = (1...150).map { queues.append(Self.event("a", Int64($0))) }
        #expect(counted.filter { $0 }.count == 100)
        let sized = (1...20).map { queues.append(Self.event("b", Int64($0), bytes: 100)) }
        #expect(sized.filter { $0 }.count == 10)
        let large = queues.append(Self.event("c", 1, bytes: 5000)), next = queues.append(Self.event("c", 2))
        #expect(large, "one event larger than the bound still goes, alone")
        #expect(!next)
        #expect(queues.count == 111)
    }

    @Test("a second copy of an identity ends its cabinet's part of the batch: it goes in the next, behind the first")
    func copies() {
        var queues = CabinetQueues()
        for seq: Int64 in [1, 2, 2, 3] { _ = queues.append(Self.event("a", seq)) }
        #expect(queues.batch(max: 10).map(\.seq) == [1, 2])
        #expect(queues.batch(max: 10).map(\.seq) == [2, 3])
        #expect(queues.isEmpty)
    }
}

@Suite("Refusals: counted by kind per cabinet, one alert each kept current")
struct CabinetRefusalsTests {
    @Test("each cabinet's refusals are counted by kind; only those refused since the last save are written; a topic naming no cabinet is counted in the totals only")
    func tallies() {
        var refusals = CabinetRefusals()
        func refusal(_ cabinet: String?, _ kind: FleetMessage.Refusal.Kind) -> FleetMessage.Refusal {
            FleetMessage.Refusal(topic: "coinmech/v1/s/\(cabinet ?? "BAD")/event", cabinet: cabinet, kind: kind, reason: "why \(kind.rawValue)")
        }
        refusals.refused(refusal("h-1", .seqRange), now: 0)
        refusals.refused(refusal("h-1", .seqRange), now: 1)
        refusals.refused(refusal("h-1", .tooLarge), now: 2)
        refusals.refused(refusal(nil, .malformed), now: 3)
        #expect(refusals.unsaved.map(\.cabinet) == ["h-1"])
        let detail = refusals.unsaved[0].detail
        #expect(detail.hasPrefix("refused 3 message(s) since ") && detail.contains("2 seq_range, 1 too_large") && detail.hasSuffix("the last: why too_large"), "\(detail)")
        #expect(refusals.totals == [.seqRange: 2, .tooLarge: 1, .malformed: 1])
        refusals.saved()
        #expect(refusals.unsaved.isEmpty)
        refusals.refused(refusal("h-2", .flood), now: 4)
        #expect(refusals.unsaved.map(\.cabinet) == ["h-2"])
    }
}
