import CoinMechGPIO
import CoinMechModel
import CoinMechSources
import Testing

/// Edges handed over all at once, stamped as the kernel stamped them, on the loop's clock.
private final class StampedEdges: EdgeInput {
    var pending: [EdgeEvent]
    init(_ edges: [EdgeEvent]) { pending = edges }
    var location: String { "stamped" }
    var descriptor: Int32? { nil }
    var nextWake: UInt64? { nil }
    func open(now: UInt64) throws(MechInputError) {}
    func edges(now: UInt64) -> [EdgeEvent] {
        defer { pending = [] }
        return pending
    }
    func close() {}
    func pulseAcceptGate(now: UInt64) {}
    func setInhibit(_ on: Bool) {}
    func tick(now: UInt64) {}
    func streamTime(now: UInt64) -> UInt64 { now }
    func wallTime(stream: UInt64) -> UInt64 { stream }
    func weigh() -> Double? { nil }
}

/// A GPIO coin's deadline runs from the kernel's timestamp of the edge that completed it, not
/// from when the deciding loop got round to it: a loop that woke late has less time left, and
/// the core must see that (docs/HARDWARE.md, "Accept gate and inhibit").
@Suite("GPIO readings carry the kernel's edge time")
struct EdgeTimeTests {
    static let ms: UInt64 = 1_000_000

    private func readings(_ events: [MechEvent]) -> [MechReading] {
        events.compactMap { if case .reading(let reading) = $0 { reading } else { nil } }
    }

    @Test("a pulse coin is sent when its gap ended, though the loop looks 400 ms later")
    func pulseCoin() {
        // Three 30 ms pulses (active low) 100 ms apart on line 4, the last starting at 1,200 ms.
        var edges: [EdgeEvent] = []
        for start in [1000, 1100, 1200].map({ UInt64($0) * Self.ms }) {
            edges.append(EdgeEvent(timestampNanoseconds: start, line: 4, rising: false))
            edges.append(EdgeEvent(timestampNanoseconds: start + 30 * Self.ms, line: 4, rising: true))
        }
        let mech = GPIOMech(input: StampedEdges(edges), decoder: PulseDecoder(settings: .init(line: 4, gapMilliseconds: 150)), lastDeviceSeq: 0)
        #expect(mech.poll(now: Instant(nanoseconds: 1250 * Self.ms)).isEmpty == false) // connects, takes the edges
        let coins = readings(mech.poll(now: Instant(nanoseconds: 1750 * Self.ms)))
        #expect(coins.map(\.measurement.channel) == [3])
        // Decidable from the last pulse's start plus the gap: 1,200 + 150 ms.
        #expect(coins.map(\.sentAt) == [Instant(nanoseconds: 1350 * Self.ms)])
    }

    @Test("a light-gate coin is sent when it reached gate B, though its edges are read 310 ms later")
    func gateCoin() {
        // Gate A occluded 1,000–1,048 ms, gate B 50 mm on from 1,100 ms (active low): 500 mm/s, 24 mm.
        let edges = [
            EdgeEvent(timestampNanoseconds: 1000 * Self.ms, line: 1, rising: false),
            EdgeEvent(timestampNanoseconds: 1048 * Self.ms, line: 1, rising: true),
            EdgeEvent(timestampNanoseconds: 1100 * Self.ms, line: 2, rising: false),
            EdgeEvent(timestampNanoseconds: 1148 * Self.ms, line: 2, rising: true),
        ]
        let decoder = LightGateDecoder(settings: .init(gateA: 1, gateB: 2, distanceMM: 50))
        let mech = GPIOMech(input: StampedEdges(edges), decoder: decoder, lastDeviceSeq: 0)
        let coins = readings(mech.poll(now: Instant(nanoseconds: 1410 * Self.ms)))
        #expect(coins.map { $0.measurement.diameterMM.map { ($0 * 10).rounded() / 10 } } == [24.0])
        #expect(coins.map(\.sentAt) == [Instant(nanoseconds: 1100 * Self.ms)])
    }
}
