import CoinMechModel
import CoinMechSerial
import CoinMechSettings
import CoinSimCore
import Testing

/// The raw-sensor mech's model on simulated time: no pty, no clock, no threads. What the
/// host would see is what the model hands over as `.write`, parsed back into sentences.
@Suite("coinsim's serial mech model on simulated time")
struct SimulatedMechTests {
    private static let ms: UInt64 = 1_000_000

    private func scenario(_ text: String) throws -> Scenario {
        try Scenario.parse(SettingsTable.parse("mix: {quarter: 1}\nseed: 7\n" + text, file: "t.yaml"))
    }

    /// A mech whose host opened the device at 0; settles for 100 ms before its first sentence.
    private func opened(_ scenario: Scenario, lockstep: Bool = false) -> SimulatedMech {
        var options = SimulatorOptions()
        options.lingerMilliseconds = 300
        options.lockstep = lockstep
        var mech = SimulatedMech(scenario: scenario, options: options, start: 0)
        mech.offered(devicePath: "/dev/pts/test")
        mech.hostOpened(at: 0)
        return mech
    }

    /// Advances to `time` and returns the sentences handed to the host.
    private func sentences(_ mech: inout SimulatedMech, at time: UInt64) -> [SerialFrame] {
        mech.advance(to: time)
        var parser = FrameParser()
        var frames: [SerialFrame] = []
        for case .write(let bytes) in mech.takeEffects() {
            parser.feed(bytes) { if case .frame(let frame) = $0 { frames.append(frame) } }
        }
        return frames
    }

    private func readings(_ frames: [SerialFrame]) -> [UInt64] {
        frames.compactMap { if case .reading(let reading) = $0 { reading.deviceSeq } else { nil } }
    }

    @Test("an accepted coin is confirmed stored once it reaches the cash box, and the journal then answers for it")
    func acceptedCoinIsStored() throws {
        var mech = opened(try scenario("coins: 1\nbaud: 0\nfirmware: {store_ms: 100}\n"))
        #expect(sentences(&mech, at: 99 * Self.ms).isEmpty, "nothing before the settle time")
        let first = sentences(&mech, at: 100 * Self.ms)
        #expect(first.first == .status(.powerUp, detail: "1"))
        #expect(readings(first) == [1])

        mech.received(SerialFrame.decision(deviceSeq: 1, accept: true).bytes, at: 110 * Self.ms)
        // On its way (jitter ×0.75–1.25 of 100 ms): a query gets no answer yet.
        mech.received(SerialFrame.query(boot: 1, deviceSeq: 1).bytes, at: 150 * Self.ms)
        #expect(sentences(&mech, at: 150 * Self.ms).isEmpty)
        #expect(sentences(&mech, at: (110 + 125) * Self.ms + 1) == [.confirmation(deviceSeq: 1, fate: .stored)])
        mech.received(SerialFrame.query(boot: 1, deviceSeq: 1).bytes, at: 300 * Self.ms)
        #expect(sentences(&mech, at: 300 * Self.ms) == [.journal(boot: 1, deviceSeq: 1, fate: .stored)])

        let truth = mech.finish(at: 400 * Self.ms)
        #expect(truth.outcomes.accepted == 1)
        #expect(truth.outcomes.stored == 1)
        #expect(truth.storedValue["USD"] == 25)  // a quarter
        #expect(truth.coins.first?.latencyUs == 10_000)
    }

    @Test("a reading unanswered by its deadline is returned; a late accept is confirmed returned")
    func deadlineMiss() throws {
        var mech = opened(try scenario("coins: 1\nbaud: 0\ndeadline_ms: 50\n"))
        #expect(readings(sentences(&mech, at: 100 * Self.ms)) == [1])
        #expect(mech.nextWake(now: 100 * Self.ms) <= 150 * Self.ms, "the deadline is a due time")
        #expect(sentences(&mech, at: 151 * Self.ms).isEmpty)
        mech.received(SerialFrame.decision(deviceSeq: 1, accept: true).bytes, at: 170 * Self.ms)
        #expect(sentences(&mech, at: 170 * Self.ms) == [.confirmation(deviceSeq: 1, fate: .returned)])

        let truth = mech.finish(at: 200 * Self.ms)
        #expect(truth.outcomes.deadlineMisses == 1)
        #expect(truth.outcomes.accepted == 0)
        #expect(truth.coins.first?.lateDecision == "A")
        #expect(truth.coins.first?.fate == "returned")
    }

    @Test("at 9600 baud a sentence reaches the host when its last byte has crossed the line, 10 bits a byte")
    func lineTiming() throws {
        var mech = opened(try scenario("coins: 1\nbaud: 9600\nrate_per_s: 0.1\nfirmware: {clock: false}\n"))
        let powerUp = SerialFrame.status(.powerUp, detail: "1").bytes.count
        let power = sentences(&mech, at: 100 * Self.ms)
        #expect(power.isEmpty, "the first byte has only just left")
        let powerUpAt = 100 * Self.ms + UInt64(powerUp) * 10 * 1_000_000_000 / 9600
        #expect(sentences(&mech, at: powerUpAt - 1).isEmpty)
        let delivered = sentences(&mech, at: powerUpAt)
        #expect(delivered == [.status(.powerUp, detail: "1")])
        // The reading queued behind it: its own length after the power-up's last byte.
        let wake = mech.nextWake(now: powerUpAt)
        let reading = sentences(&mech, at: wake)
        #expect(readings(reading) == [1])
        let length = reading.first.map { $0.bytes.count } ?? 0
        #expect(wake == powerUpAt + UInt64(length) * 10 * 1_000_000_000 / 9600)
    }

    @Test("a disconnect fault pulls the device away for its time, then offers a new one; the coin waits")
    func disconnect() throws {
        var mech = opened(try scenario("coins: 2\nbaud: 0\nrate_per_s: 1000\nfaults: {disconnect_at: [2], disconnect_ms: 500}\n"), lockstep: true)
        #expect(readings(sentences(&mech, at: 100 * Self.ms)) == [1])
        mech.received(SerialFrame.decision(deviceSeq: 1, accept: false).bytes, at: 101 * Self.ms)
        mech.advance(to: 101 * Self.ms)
        let effects = mech.takeEffects()
        #expect(effects.contains(.unplug))
        #expect(mech.isUnplugged)
        #expect(mech.nextWake(now: 101 * Self.ms) == 601 * Self.ms)
        mech.advance(to: 601 * Self.ms)
        #expect(mech.takeEffects() == [.plugIn])
        #expect(!mech.isUnplugged)
        mech.offered(devicePath: "/dev/pts/test2")
        mech.hostOpened(at: 610 * Self.ms)
        // The second coin comes after the new connection's settle time.
        #expect(sentences(&mech, at: 709 * Self.ms).isEmpty)
        #expect(readings(sentences(&mech, at: 710 * Self.ms)) == [2])

        let truth = mech.finish(at: 800 * Self.ms)
        #expect(truth.faultsInjected.disconnects == 1)
        #expect(truth.connections.devicePaths == ["/dev/pts/test", "/dev/pts/test2"])
        #expect(truth.connections.connects == 2)
    }

    @Test("the session ends after its last coin and the linger, not before")
    func endsAfterLinger() throws {
        var mech = opened(try scenario("coins: 1\nbaud: 0\n"), lockstep: true)
        _ = sentences(&mech, at: 100 * Self.ms)
        mech.received(SerialFrame.decision(deviceSeq: 1, accept: false).bytes, at: 105 * Self.ms)
        // The answer ends the script at 105 ms; the turn after starts the linger.
        mech.advance(to: 105 * Self.ms)
        mech.advance(to: 105 * Self.ms)
        #expect(!mech.isFinished)
        mech.advance(to: 105 * Self.ms + 300 * Self.ms - 1)
        #expect(!mech.isFinished)
        mech.advance(to: 105 * Self.ms + 300 * Self.ms)
        #expect(mech.isFinished)
    }
}
