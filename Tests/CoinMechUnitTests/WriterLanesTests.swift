@testable import CoinMechFleet
import Testing

/// The ingest's writers (docs/FLEET.md, "Ingest at the database's speed"): a cabinet always has
/// the same writer, a writer has one batch in flight at most, and a cabinet's events leave in
/// order, so no two batches of one cabinet are ever committed at once.
@Suite("Writer lanes: each cabinet one writer, one batch in flight per writer, its events in order")
struct WriterLanesTests {
    static func event(_ cabinet: String, _ seq: Int64) -> FleetMessage.Event {
        FleetMessage.Event(cabinet: cabinet, site: "s", seq: seq, kind: "decision", time: 1, json: "{}", published: nil)
    }

    @Test("a cabinet's writer is the same in every run and spreads cabinets over the writers")
    func stableLane() {
        // FNV-1a of "c-1" mod 4, worked out apart (Python's integers): 0.
        #expect(WriterLanes.lane(of: "c-1", among: 4) == 0)
        var counts = [0, 0, 0, 0]
        for index in 0..<4000 { counts[WriterLanes.lane(of: "b-\(index)", among: 4)] += 1 }
        #expect(counts.allSatisfy { $0 > 800 && $0 < 1200 }, "\(counts)")
    }

    @Test("batches started at once never share a cabinet; each cabinet's seqs leave in order, each once")
    func inFlightDisjoint() {
        var lanes = WriterLanes(count: 3, perCabinet: 10_000, perCabinetBytes: 1 << 30)
        let cabinets = (0..<50).map { "c-\($0)" }
        for seq in Int64(1)...40 {
            for cabinet in cabinets {
                let taken = lanes.append(Self.event(cabinet, seq))
                #expect(taken)
            }
        }
        var seen: [String: Int64] = [:]
        var rounds = 0
        while !lanes.isEmpty {
            rounds += 1
            let started = lanes.start(max: 64)
            #expect(!started.isEmpty)
            #expect(lanes.start(max: 64).isEmpty, "a busy writer started a second batch")
            var inFlight = Set<String>()
            for (lane, batch) in started {
                for cabinet in Set(batch.map(\.cabinet)) {
                    #expect(inFlight.insert(cabinet).inserted, "\(cabinet) in two batches at once")
                    #expect(WriterLanes.lane(of: cabinet, among: 3) == lane)
                }
                for event in batch {
                    #expect(event.seq == (seen[event.cabinet] ?? 0) + 1, "\(event.cabinet) out of order")
                    seen[event.cabinet] = event.seq
                }
            }
            for (lane, _) in started { lanes.finished(lane) }
        }
        #expect(seen.count == 50 && seen.values.allSatisfy { $0 == 40 })
        #expect(!lanes.inFlight && lanes.waiting == 0 && lanes.bytes == 0)
        #expect(rounds >= 40 * 50 / (64 * 3))
    }
}
