import CoinMechMDB
import Testing

/// The MDB changer host on simulated time: the test plays the adapter, line by line.
@Suite("MDB: the changer host sets a changer up, polls it and reports its coins")
struct MDBChangerHostTests {
    private static let ms: UInt64 = 1_000_000
    /// A level 3 euro changer (maehw/mdb-coin-controller's CF7900 SETUP table).
    private static let setupL3 = "p,0319780502000F0102040A142800000000000000000000"
    private static let identity = "p,4D45493030303030303132333435364346373930304D4442202020012700000007"

    /// What the host wrote, as the adapter reads it.
    private func lines(_ outputs: [MDBChangerHostOutput]) -> [String] {
        outputs.compactMap { if case .send(let command) = $0 { command.text } else { nil } }
    }

    private func events(_ outputs: [MDBChangerHostOutput]) -> [MDBChangerHostEvent] {
        outputs.compactMap { if case .event(let event) = $0 { event } else { nil } }
    }

    private func reply(_ host: inout MDBChangerHost, _ line: String, at time: UInt64) -> [MDBChangerHostOutput] {
        host.received(Array((line + "\r\n").utf8), at: time)
    }

    /// A started host with types 0-5 allowed that has had the adapter's answers and the
    /// changer's first SETUP (at 3 ms): it is draining the changer next.
    private func throughFirstSetup(_ setup: String = setupL3) -> (host: MDBChangerHost, outputs: [MDBChangerHostOutput]) {
        var host = MDBChangerHost()
        var outputs = host.start(now: 0)
        outputs += host.setAllowed(0x003F, now: 0)
        outputs += reply(&host, "m,ACK", at: 1 * Self.ms)
        outputs += reply(&host, "f,ACK", at: 2 * Self.ms)
        outputs += reply(&host, setup, at: 3 * Self.ms)
        return (host, outputs)
    }

    /// A host with types 0-5 allowed, taken through the setup of a changer (level 3 unless
    /// told); returns its lines and events so far, and leaves it running at 600 ms.
    private func running(level3: Bool = true) -> (host: MDBChangerHost, lines: [String], events: [MDBChangerHostEvent]) {
        let setup = level3 ? Self.setupL3 : "p,0200010502000F0102050A"
        var (host, outputs) = throughFirstSetup(setup)  // SETUP, to value what it still holds
        outputs += reply(&host, "p,ACK", at: 4 * Self.ms)  // POLL: nothing held
        outputs += reply(&host, "p,ACK", at: 5 * Self.ms)  // RESET acknowledged
        outputs += host.tick(now: 505 * Self.ms)  // the settle is over: POLL
        outputs += reply(&host, "p,0B", at: 506 * Self.ms)  // changer was reset
        outputs += reply(&host, setup, at: 507 * Self.ms)
        if level3 {
            outputs += reply(&host, Self.identity, at: 508 * Self.ms)
            outputs += reply(&host, "p,ACK", at: 509 * Self.ms)  // features
        }
        outputs += reply(&host, "p,0000120A0805", at: 510 * Self.ms)
        outputs += reply(&host, "p,ACK", at: 511 * Self.ms)  // coin types
        outputs += host.tick(now: 600 * Self.ms)
        return (host, lines(outputs), events(outputs))
    }

    @Test("a level 3 changer is set up in MDB's order: master mode, SETUP and a drain, RESET, SETUP, identification, features, tubes, coin types, then POLLs")
    func setupSequence() {
        let (host, lines, events) = running()
        #expect(lines == ["M,1", "F,RESPTIMEOUT,100", "R,09", "R,0B", "R,08", "R,0B", "R,09", "R,0F,00", "R,0F,0100000003", "R,0A", "R,0C,003FFFFF", "R,0B"])
        #expect(host.isRunning)
        #expect(host.accepting == 0x003F)
        #expect(host.identity?.model == "CF7900MDB")
        #expect(host.tubes?.counts.prefix(4) == [18, 10, 8, 5])
        #expect(events.contains(.accepting(0x003F)))
        #expect(events.contains { if case .ready = $0 { true } else { false } })
        #expect(!events.contains(.responding), "the changer never stopped answering")
    }

    @Test("a level 2 changer skips the expansion commands; only types with a value are enabled")
    func levelTwo() {
        // Credits 01 02 05 0A for types 0-3, scaling 5, a US telephone code.
        let (host, lines, _) = running(level3: false)
        #expect(!lines.contains("R,0F,00"))
        #expect(lines.contains("R,0C,000FFFFF"), "types 4 and 5 are allowed but have no value: \(lines)")
        #expect(host.identity == nil)
        #expect(host.setup?.valueMinor(ofType: 2) == 25)
    }

    @Test("coins the changer took while no host polled it are reported, valued, before the RESET that would wipe them")
    func drainBeforeReset() {
        var (host, _) = throughFirstSetup()
        let first = reply(&host, "p,5306", at: 4 * Self.ms)
        #expect(events(first) == [.deposited(type: 3, routing: .tube, valueMinor: 50, tubeCount: 6)])
        #expect(lines(first).isEmpty, "the next POLL waits its interval")
        #expect(lines(host.tick(now: 104 * Self.ms)) == ["R,0B"])
        #expect(lines(reply(&host, "p,ACK", at: 105 * Self.ms)) == ["R,08"], "drained: now the RESET")
    }

    @Test("a deposit is reported with its value, routing and tube count; every event of a POLL is")
    func deposits() {
        var (host, _, _) = running()
        let outputs = reply(&host, "p,5306410072020B", at: 601 * Self.ms)
        // 53 06: type 3 (50c) to its tube, 6 there; 41 00: type 1 (10c) to the cash box;
        // 72 02: type 2 rejected; 0B: the changer was reset.
        #expect(Array(events(outputs).prefix(4)) == [
            .deposited(type: 3, routing: .tube, valueMinor: 50, tubeCount: 6),
            .deposited(type: 1, routing: .cashBox, valueMinor: 10, tubeCount: 0),
            .deposited(type: 2, routing: .reject, valueMinor: 20, tubeCount: 2),
            .status(.changerWasReset),
        ])
        // A reset disables every coin type: the host sets the changer up again, from SETUP.
        #expect(events(outputs).contains(.acceptanceUnknown))
        #expect(lines(outputs) == ["R,09"])
        #expect(!host.isRunning)
        #expect(host.accepting == nil)
    }

    @Test("POLLs come every 100 ms, and TUBE STATUS every 25 s")
    func pacing() {
        var (host, _, _) = running()
        #expect(lines(reply(&host, "p,ACK", at: 601 * Self.ms)).isEmpty)
        #expect(host.nextWake == 701 * Self.ms)
        #expect(lines(host.tick(now: 700 * Self.ms)).isEmpty)
        #expect(lines(host.tick(now: 701 * Self.ms)) == ["R,0B"])
        _ = reply(&host, "p,ACK", at: 702 * Self.ms)
        #expect(lines(host.tick(now: 25_510 * Self.ms)) == ["R,0A"])
        let tubes = reply(&host, "p,0000130A0805", at: 25_511 * Self.ms)
        #expect(events(tubes).contains { if case .tubes(let status) = $0 { status.counts[0] == 19 } else { false } })
    }

    @Test("inhibit sends COIN TYPE 0 as soon as the line is free; lifting it enables the types again")
    func inhibit() {
        var (host, _, _) = running()
        // A POLL is on the wire: COIN TYPE waits for its reply, then goes first.
        #expect(lines(host.setInhibited(true, now: 601 * Self.ms)).isEmpty)
        #expect(lines(reply(&host, "p,ACK", at: 602 * Self.ms)) == ["R,0C,0000FFFF"])
        #expect(events(reply(&host, "p,ACK", at: 603 * Self.ms)).contains(.accepting(0)))
        #expect(host.accepting == 0)
        #expect(lines(host.setInhibited(false, now: 620 * Self.ms)) == ["R,0C,003FFFFF"])
    }

    @Test("a late reply answers its own line: after a timeout the host fences with V and takes the POLL's coins")
    func lateReply() {
        var (host, _, _) = running()
        // The POLL written at 600 ms is not answered in 500 ms: the host writes the fence.
        #expect(lines(host.tick(now: 1_100 * Self.ms)) == ["V"])
        let late = reply(&host, "p,5306", at: 1_150 * Self.ms)
        #expect(events(late) == [.deposited(type: 3, routing: .tube, valueMinor: 50, tubeCount: 6)])
        #expect(lines(late).isEmpty, "the fence is still out")
        #expect(events(reply(&host, "v,1.0.0.0,C015E000", at: 1_151 * Self.ms)).isEmpty)
        #expect(host.isRunning && host.accepting == 0x003F)
        #expect(lines(host.tick(now: 1_250 * Self.ms)) == ["R,0B"])
    }

    @Test("a POLL whose reply never comes is reported as lost; the tube counts, the trace left of its coins, are read before the next POLL")
    func lostPollReply() {
        var (host, _, _) = running()
        _ = host.tick(now: 1_100 * Self.ms)  // the fence
        let fenced = reply(&host, "v,1.0.0.0,C015E000", at: 1_101 * Self.ms)
        #expect(events(fenced) == [.pollReplyLost])
        #expect(lines(fenced).isEmpty)
        #expect(lines(host.tick(now: 1_201 * Self.ms)) == ["R,0A"], "TUBE STATUS a poll interval later, not in 25 s")
        let tubes = reply(&host, "p,0000130A0805", at: 1_202 * Self.ms)
        #expect(events(tubes).contains { if case .tubes(let status) = $0 { status.counts[0] == 19 } else { false } })
        #expect(lines(tubes) == ["R,0B"], "then the POLL goes again")
    }

    @Test("stopping writes COIN TYPE 0 at once, a line in flight or not, reports a POLL in flight lost, and sends nothing more until started again")
    func stop() {
        var (host, _, _) = running()  // a POLL is on the wire
        let stopped = host.stop(now: 601 * Self.ms)
        #expect(lines(stopped) == ["R,0C,0000FFFF"])
        #expect(events(stopped) == [.pollReplyLost])
        #expect(host.accepting == nil && host.nextWake == nil)
        #expect(lines(reply(&host, "p,ACK", at: 602 * Self.ms)).isEmpty)
        #expect(lines(host.tick(now: 5_000 * Self.ms)).isEmpty)
        #expect(host.stop(now: 5_001 * Self.ms).isEmpty, "stopped once")
        #expect(lines(host.start(now: 6_000 * Self.ms)) == ["M,1"], "a start sets it up from the beginning")
    }

    @Test("a reply no line waits for is reported, never taken for a later line")
    func strayReply() {
        var (host, _, _) = running()
        // Two replies in one read with one POLL on the wire: the second answers nothing.
        let outputs = reply(&host, "p,ACK\r\np,5306", at: 601 * Self.ms)
        #expect(events(outputs) == [.unexpectedReply("p,5306")])
        #expect(lines(outputs).isEmpty)
    }

    @Test("a changer that stops answering is retried every 100 ms, reported once per outage after 2 s, and set up again from the start")
    func notResponding() {
        var (host, _, _) = running()
        var gone = reply(&host, "p,NACK", at: 601 * Self.ms)
        #expect(lines(gone).isEmpty, "a NACK is retried a poll interval later")
        var time: UInt64 = 601
        while events(gone).isEmpty, time < 5_000 {
            let wake = (host.nextWake ?? 0) / Self.ms
            #expect(wake == time + 100)
            #expect(lines(host.tick(now: wake * Self.ms)) == ["R,0B"], "at \(wake) ms")
            time = wake + 1
            gone = reply(&host, "p,NACK", at: time * Self.ms)
        }
        // Failing since 601 ms, a line every 101 ms: gone at the first failure 2 s later.
        #expect(time == 2_621)
        #expect(events(gone) == [.notResponding(failures: 21), .acceptanceUnknown])
        #expect(!host.isRunning && host.accepting == nil)
        // The adapter answers, the changer still does not: no second report, no "responding".
        #expect(lines(host.tick(now: 4_621 * Self.ms)) == ["M,1"])
        var again = reply(&host, "m,ACK", at: 4_622 * Self.ms) + reply(&host, "f,ACK", at: 4_623 * Self.ms)
        again += reply(&host, "p,NACK", at: 4_624 * Self.ms)
        #expect(events(again).isEmpty)
        // Back: its first answer says so.
        #expect(lines(host.tick(now: 4_724 * Self.ms)) == ["R,09"])
        #expect(events(reply(&host, Self.setupL3, at: 4_725 * Self.ms)) == [.responding])
    }

    @Test("a changer that does not answer IDENTIFICATION is used without features")
    func noIdentification() {
        var (host, _) = throughFirstSetup()
        _ = reply(&host, "p,ACK", at: 4 * Self.ms)
        _ = reply(&host, "p,ACK", at: 5 * Self.ms)
        _ = host.tick(now: 505 * Self.ms)
        _ = reply(&host, "p,0B", at: 506 * Self.ms)
        #expect(lines(reply(&host, Self.setupL3, at: 507 * Self.ms)) == ["R,0F,00"])
        _ = reply(&host, "p,NACK", at: 508 * Self.ms)
        #expect(lines(host.tick(now: 608 * Self.ms)) == ["R,0F,00"])
        _ = reply(&host, "p,NACK", at: 609 * Self.ms)
        #expect(lines(host.tick(now: 709 * Self.ms)) == ["R,0A"], "given up after two: on to the tubes")
        #expect(host.identity == nil)
    }

    @Test("an unreadable adapter line is the reply its line gets; a cut POLL reply keeps what it read")
    func badLines() {
        var (host, _, _) = running()
        let garbled = reply(&host, "p,5G", at: 601 * Self.ms)
        #expect(events(garbled) == [.adapterError(.badHex("p,5G")), .pollReplyLost])
        #expect(lines(host.tick(now: 701 * Self.ms)) == ["R,0A"], "the tube counts first, then the POLL goes again")
        #expect(lines(reply(&host, "p,0000120A0805", at: 702 * Self.ms)) == ["R,0B"])
        let cut = reply(&host, "p,530623", at: 703 * Self.ms)
        #expect(events(cut) == [.deposited(type: 3, routing: .tube, valueMinor: 50, tubeCount: 6), .slugs(count: 3)])
        #expect(lines(host.tick(now: 803 * Self.ms)) == ["R,0B"])
        let truncated = reply(&host, "p,230641", at: 804 * Self.ms)
        #expect(events(truncated).contains(.replyError(.truncatedEvent(0x41))))
        #expect(host.isRunning)
    }
}
