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

    /// A host with types 0-5 allowed, taken through the setup of a level 3 changer; returns its
    /// lines and events so far, and leaves it running at 600 ms.
    private func running(level3: Bool = true) -> (host: MDBChangerHost, lines: [String], events: [MDBChangerHostEvent]) {
        var host = MDBChangerHost()
        var outputs = host.start(now: 0)
        outputs += host.setAllowed(0x003F, now: 0)
        outputs += reply(&host, "m,ACK", at: 1 * Self.ms)
        outputs += reply(&host, "f,ACK", at: 2 * Self.ms)
        outputs += reply(&host, "p,ACK", at: 3 * Self.ms)  // RESET acknowledged
        outputs += host.tick(now: 503 * Self.ms)  // the settle is over: POLL
        outputs += reply(&host, "p,0B", at: 504 * Self.ms)  // changer was reset
        outputs += reply(&host, level3 ? Self.setupL3 : "p,0200010502000F0102050A", at: 505 * Self.ms)
        if level3 {
            outputs += reply(&host, Self.identity, at: 506 * Self.ms)
            outputs += reply(&host, "p,ACK", at: 507 * Self.ms)  // features
        }
        outputs += reply(&host, "p,0000120A0805", at: 508 * Self.ms)
        outputs += reply(&host, "p,ACK", at: 509 * Self.ms)  // coin types
        outputs += host.tick(now: 600 * Self.ms)
        return (host, lines(outputs), events(outputs))
    }

    @Test("a level 3 changer is set up in MDB's order: master mode, reset, SETUP, identification, features, tubes, coin types, then POLLs")
    func setupSequence() {
        let (host, lines, events) = running()
        #expect(lines == ["M,1", "F,RESPTIMEOUT,100", "R,08", "R,0B", "R,09", "R,0F,00", "R,0F,0100000003", "R,0A", "R,0C,003FFFFF", "R,0B"])
        #expect(host.isRunning)
        #expect(host.accepting == 0x003F)
        #expect(host.identity?.model == "CF7900MDB")
        #expect(host.tubes?.counts.prefix(4) == [18, 10, 8, 5])
        #expect(events.contains(.accepting(0x003F)))
        #expect(events.contains { if case .ready = $0 { true } else { false } })
    }

    @Test("a level 2 changer skips the expansion commands; only types with a value are enabled")
    func levelTwo() {
        // Credits 01 02 05 0A for types 0-3, scaling 5, a US telephone code.
        var (host, lines, _) = running(level3: false)
        #expect(!lines.contains("R,0F,00"))
        #expect(lines.contains("R,0C,000FFFFF"), "types 4 and 5 are allowed but have no value: \(lines)")
        #expect(host.identity == nil)
        #expect(host.setup?.valueMinor(ofType: 2) == 25)
        _ = host.tick(now: 700 * Self.ms)
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
        #expect(lines(host.tick(now: 25_508 * Self.ms)) == ["R,0A"])
        let tubes = reply(&host, "p,0000130A0805", at: 25_509 * Self.ms)
        #expect(events(tubes).contains { if case .tubes(let status) = $0 { status.counts[0] == 19 } else { false } })
    }

    @Test("inhibit sends COIN TYPE 0 at once; lifting it enables the types again")
    func inhibit() {
        var (host, _, _) = running()
        _ = reply(&host, "p,ACK", at: 601 * Self.ms)
        #expect(lines(host.setInhibited(true, now: 610 * Self.ms)) == ["R,0C,0000FFFF"])
        #expect(events(reply(&host, "p,ACK", at: 611 * Self.ms)).contains(.accepting(0)))
        #expect(host.accepting == 0)
        #expect(lines(host.setInhibited(false, now: 620 * Self.ms)) == ["R,0C,003FFFFF"])
    }

    @Test("a changer that stops answering is retried, reported once, and set up again from the start")
    func notResponding() {
        var (host, _, _) = running()
        #expect(lines(reply(&host, "p,NACK", at: 601 * Self.ms)) == ["R,0B"], "a NACK is retried at once")
        #expect(lines(host.tick(now: 1_101 * Self.ms)) == ["R,0B"], "500 ms without a reply: retried")
        let gone = host.tick(now: 1_601 * Self.ms)
        #expect(events(gone) == [.notResponding(failures: 3)])
        #expect(lines(gone).isEmpty)
        #expect(!host.isRunning && host.accepting == nil)
        #expect(lines(host.tick(now: 3_601 * Self.ms)) == ["M,1"])
        #expect(events(reply(&host, "m,ACK", at: 3_602 * Self.ms)) == [.responding])
    }

    @Test("bad adapter lines and bad replies are reported and cost only a retry")
    func badLines() {
        var (host, _, _) = running()
        let garbled = reply(&host, "p,5G", at: 601 * Self.ms)
        #expect(events(garbled) == [.adapterError(.badHex("p,5G"))])
        let cut = reply(&host, "p,53", at: 602 * Self.ms)
        #expect(events(cut) == [.replyError(.truncatedEvent(0x53))])
        #expect(host.isRunning)
    }
}
