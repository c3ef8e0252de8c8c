import CoinMechMDB
import CoinSimCore
import Testing

/// The changer host against coinsim's changer, on simulated time: every line the host writes
/// reaches the changer 1 ms later and its reply comes back 1 ms after that. The changer's own
/// account of where each coin went is the ground truth.
@Suite("MDB: the changer host against a simulated changer, joined with the changer's truth")
struct MDBChangerSimulationTests {
    private static let ms: UInt64 = 1_000_000

    /// The host and the changer on one simulated line.
    struct Line {
        var host = MDBChangerHost()
        var changer = MDBChangerDevice()
        var now: UInt64 = 0
        var events: [MDBChangerHostEvent] = []

        mutating func carry(_ outputs: [MDBChangerHostOutput]) {
            var pending = outputs
            while !pending.isEmpty {
                let output = pending.removeFirst()
                switch output {
                case .event(let event): events.append(event)
                case .send(let command):
                    now += MDBChangerSimulationTests.ms
                    let reply = changer.handle(command.text[...])
                    now += MDBChangerSimulationTests.ms
                    pending += host.received(Array((reply.text + "\r\n").utf8), at: now)
                }
            }
        }

        /// Runs the host's timers until `time`.
        mutating func run(until time: UInt64) {
            while let wake = host.nextWake, wake <= time {
                now = max(now, wake)
                carry(host.tick(now: now))
            }
            now = max(now, time)
        }

        /// Started with types 0-5 allowed, and run for a second: set up and polling.
        static func running() -> Line {
            var line = Line()
            line.carry(line.host.start(now: 0))
            line.carry(line.host.setAllowed(0x003F, now: 0))
            line.run(until: 1_000 * MDBChangerSimulationTests.ms)
            return line
        }

        var deposits: [(type: Int, routing: MDBChangerEvent.Routing, value: Int64?)] {
            events.compactMap { if case .deposited(let type, let routing, let value, _) = $0 { (type, routing, value) } else { nil } }
        }
    }

    @Test("every coin the changer keeps is reported once, with its value and where it went; disabled ones as rejected")
    func coinsAgainstTruth() {
        var line = Line.running()
        #expect(line.host.isRunning)
        #expect(line.changer.enabled == 0x003F)

        // 2 euro (type 5) go to the cash box, 50c (type 3) to its tube, a type the host did not
        // enable is returned, something unknown is returned with no report.
        var truth: [(Int, MDBChangerDevice.Fate)] = []
        for (index, type) in [5, 3, 3, 0, 7, 1].enumerated() {
            truth.append((type, line.changer.insert(type: type)))
            line.run(until: (1_000 + UInt64(index + 1) * 250) * Self.ms)
        }
        #expect(line.changer.insert(type: nil) == .rejected)
        line.run(until: 4_000 * Self.ms)

        let expectedKept = truth.filter { $0.1 != .rejected }
        let reportedKept = line.deposits.filter { $0.routing.isKept }
        #expect(reportedKept.map(\.type) == expectedKept.map(\.0))
        #expect(reportedKept.map { $0.routing == .tube } == expectedKept.map { $0.1 == .tube })
        // The changer's own values: 200, 50, 50, 5, 10 cents; the credit is what was kept.
        #expect(reportedKept.compactMap(\.value).reduce(0, +) == 315)
        #expect(line.deposits.filter { !$0.routing.isKept }.map(\.type) == [7])
        #expect(line.changer.tubes[3] == 7 && line.changer.tubes[0] == 19)
    }

    @Test("inhibited, the changer takes nothing; a power cycle is seen, and the coin types are set again")
    func inhibitAndPowerCycle() {
        var line = Line.running()
        #expect(line.host.isRunning)
        line.carry(line.host.setInhibited(true, now: line.now))
        line.run(until: 1_200 * Self.ms)
        #expect(line.changer.enabled == 0)
        #expect(line.changer.insert(type: 3) == .rejected)
        line.carry(line.host.setInhibited(false, now: line.now))
        line.run(until: 1_400 * Self.ms)
        #expect(line.changer.enabled == 0x003F)

        line.changer.reset()  // power comes and goes
        line.run(until: 2_000 * Self.ms)
        #expect(line.events.contains(.status(.changerWasReset)))
        #expect(line.changer.enabled == 0x003F, "the host set the coin types again after the reset")
        #expect(line.changer.insert(type: 4) == .cashBox)
        line.run(until: 2_500 * Self.ms)
        #expect(line.deposits.last?.type == 4 && line.deposits.last?.value == 100)
    }
}
