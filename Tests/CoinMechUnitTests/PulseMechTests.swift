import CoinMechGPIO
import CoinMechSources
import CoinMechSupport
@testable import CoinMechTestSupport
import Foundation
import Testing

@Suite("Pulse mech from a replayed edge stream")
struct PulseMechTests {
    @Test("a replayed stream becomes readings with channels, numbered on from the ledger's last")
    func replay() throws {
        let input = ReplayEdgeInput(path: "\(TestSupport.packageRoot)/Tests/Fixtures/edges/pulse-clean.txt", speed: 10)
        let mech = GPIOMech(input: input, decoder: PulseDecoder(settings: .init(line: 4, gapMilliseconds: 150, highestChannel: 6)), lastDeviceSeq: 41)
        var readings: [(UInt64, UInt32?)] = []
        var connected = false
        let deadline = Date().addingTimeInterval(5)
        while readings.count < 3, Date() < deadline {
            for event in mech.poll(now: .now) {
                switch event {
                case .connected: connected = true
                case .reading(let reading): readings.append((reading.deviceSeq, reading.measurement.channel))
                default: break
                }
            }
            usleep(2000)
        }
        #expect(connected)
        #expect(readings.map(\.0) == [42, 43, 44])
        #expect(readings.map(\.1) == [1, 2, 5])
        #expect(mech.answer(deviceSeq: 42, accept: true))
        #expect(input.acceptGatePulses == 1)
    }
}
