import CoinMechMDB
import CoinMechSources
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
        /// The next line that begins so is taken by the changer and its reply lost, or answered
        /// NACK by the adapter (its ACK lost on the bus).
        var loseReplyTo: String?
        var nackReplyTo: String?

        mutating func carry(_ outputs: [MDBChangerHostOutput]) {
            var pending = outputs
            while !pending.isEmpty {
                let output = pending.removeFirst()
                switch output {
                case .event(let event): events.append(event)
                case .send(let command):
                    now += MDBChangerSimulationTests.ms
                    let reply = changer.handle(command.text[...])
                    if let prefix = loseReplyTo, command.text.hasPrefix(prefix) {
                        loseReplyTo = nil
                        continue
                    }
                    now += MDBChangerSimulationTests.ms
                    if let prefix = nackReplyTo, command.text.hasPrefix(prefix) {
                        nackReplyTo = nil
                        pending += host.received(Array("p,NACK\r\n".utf8), at: now)
                        continue
                    }
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

    /// Runs the line until `time`, the changer paying a coin of its payout every 80 ms (as
    /// coinsim does), and `fault` given the coins paid so far.
    private static func pay(_ line: inout Line, until time: UInt64, fault: (Int, inout MDBChangerDevice) -> Void = { _, _ in }) -> Int {
        var paid = 0
        var next = line.now + 80 * ms
        while next <= time {
            line.run(until: next)
            if line.changer.isPaying {
                fault(paid, &line.changer)
                if line.changer.payOne() != nil { paid += 1 }
            }
            next += 80 * ms
        }
        line.run(until: time)
        return paid
    }

    private static func dispensed(_ line: Line) -> [(type: Int, count: Int, tubes: [Int], jammed: Bool, disturbed: Bool)] {
        line.events.compactMap { if case .dispensed(let d) = $0 { (d.type, d.count, d.tubes.counts, d.jammed, d.disturbed) } else { nil } }
    }

    /// Held for a payout until still: COIN TYPE 0 with the manual buttons off, then a quiet POLL.
    private static func held(alternativePayout: Bool = false) -> Line {
        var line = Line()
        if alternativePayout {
            var settings = MDBChangerDevice.Settings()
            settings.features.insert(.alternativePayout)
            line.changer = MDBChangerDevice(settings: settings)
        }
        line.carry(line.host.start(now: 0))
        line.carry(line.host.setAllowed(0x003F, now: 0))
        line.run(until: 1_000 * MDBChangerSimulationTests.ms)
        line.carry(line.host.holdForPayout(true, now: line.now))
        #expect(!line.host.isStill)
        line.run(until: line.now + 500 * ms)
        #expect(line.host.isStill)
        #expect(line.changer.enabled == 0 && line.changer.manualDispense == 0, "held: no coin type, no manual dispense button")
        return line
    }

    @Test("a let-go whose COIN TYPE reply is lost, or NACKed, leaves what the changer takes unknown: the next hold is still only once it takes nothing",
          arguments: [false, true])
    func holdAfterLostCoinType(nacked: Bool) {
        var line = Self.held()
        // Let go, and the changer takes the coin types, but its answer is lost on the line (or
        // on the bus: the adapter says NACK).
        if nacked { line.nackReplyTo = "R,0C" } else { line.loseReplyTo = "R,0C" }
        line.carry(line.host.holdForPayout(false, now: line.now))
        #expect(line.changer.enabled == 0x003F)
        // Held again before the host tried anything more.
        line.carry(line.host.holdForPayout(true, now: line.now))
        line.run(until: line.now + 1_500 * Self.ms)
        #expect(line.host.isStill)
        #expect(line.changer.enabled == 0 && line.changer.manualDispense == 0, "still only while the changer takes nothing (it takes 0x\(String(line.changer.enabled, radix: 16)))")
        #expect(line.events.contains(.acceptanceUnknown))
    }

    @Test("a DISPENSE is counted from the tubes once the changer stops saying payout busy: the fall is what it paid")
    func dispenseCountedFromTubes() {
        var line = Self.held()
        let before = line.changer.tubes[0]
        let (accepted, outputs) = line.host.dispense(type: 0, count: 7, now: line.now)
        #expect(accepted)
        line.carry(outputs)
        #expect(!line.host.dispense(type: 1, count: 1, now: line.now).accepted, "one DISPENSE at a time")
        let paid = Self.pay(&line, until: line.now + 2_000 * Self.ms)
        // The truth: the changer paid 7; the host read its tube afterwards.
        #expect(paid == 7 && line.changer.tubes[0] == before - 7)
        let counted = Self.dispensed(line)
        #expect(counted.count == 1)
        #expect(counted.first?.type == 0 && counted.first?.count == 7 && counted.first?.tubes[0] == before - 7)
        #expect(counted.first?.jammed == false && counted.first?.disturbed == false)
        #expect(!line.host.isDispensing)
        // Let go: the coin types and the buttons come back.
        line.carry(line.host.holdForPayout(false, now: line.now))
        line.run(until: line.now + 200 * Self.ms)
        #expect(line.changer.enabled == 0x003F && line.changer.manualDispense == 0xFFFF)
    }

    @Test("a payout that jams is counted short; one a reset stops is counted from the tubes the new setup reads")
    func jamAndResetMidPayout() {
        var line = Self.held()
        let before = line.changer.tubes[1]
        line.carry(line.host.dispense(type: 1, count: 5, now: line.now).outputs)
        let paid = Self.pay(&line, until: line.now + 2_000 * Self.ms) { paid, changer in if paid == 2 { changer.jamPayout() } }
        #expect(paid == 2)
        #expect(Self.dispensed(line).last?.tubes[1] == before - 2)
        #expect(Self.dispensed(line).last?.jammed == true, "the jam reported while paying comes with the count")
        #expect(line.events.contains(.status(.tubeJam)))

        // A reset after 1 coin: the host sets the changer up again and counts the tubes then.
        let before0 = line.changer.tubes[0]
        line.carry(line.host.dispense(type: 0, count: 4, now: line.now).outputs)
        let paidBeforeReset = Self.pay(&line, until: line.now + 3_000 * Self.ms) { paid, changer in if paid == 1 && changer.payout?.paid == 1 { changer.reset() } }
        #expect(paidBeforeReset == 1)
        #expect(Self.dispensed(line).count == 2)
        #expect(Self.dispensed(line).last?.tubes[0] == before0 - 1)
        #expect(line.host.isRunning)
    }

    @Test("a DISPENSE whose answer is lost is still counted from the tubes, never sent again")
    func lostDispenseAnswer() {
        var line = Self.held()
        let before = line.changer.tubes[2]
        var outputs = line.host.dispense(type: 2, count: 3, now: line.now).outputs
        // The adapter writes the DISPENSE to the changer, and its answer is lost.
        var sent = 0
        while let output = outputs.first {
            outputs.removeFirst()
            if case .send(let command) = output, command.text.hasPrefix("R,0D") {
                sent += 1
                _ = line.changer.handle(command.text[...])
            } else {
                line.carry([output])
            }
        }
        #expect(sent == 1)
        let paid = Self.pay(&line, until: line.now + 3_000 * Self.ms)
        #expect(paid == 3)
        #expect(Self.dispensed(line).last?.tubes[2] == before - 3)
        #expect(line.changer.tubes[2] == before - 3, "paid once: the DISPENSE was not repeated")
    }

    @Test("a coin jam while paying is the acceptor's, not the payout's: a short count is not explained by it")
    func coinJamIsNotATubeJam() {
        var line = Self.held()
        line.carry(line.host.dispense(type: 0, count: 3, now: line.now).outputs)
        _ = Self.pay(&line, until: line.now + 2_000 * Self.ms) { paid, changer in if paid == 1 && changer.payout?.paid == 1 { changer.report(.coinJam) } }
        #expect(Self.dispensed(line).last?.jammed == false)
    }

    @Test("a coin that reaches a tube while held breaks the stillness, and one during a DISPENSE marks its count disturbed")
    func depositWhileHeld() {
        var line = Self.held()
        // A coin already in the validator when COIN TYPE 0 came: it lands in its tube.
        line.changer.enable(0x003F)
        #expect(line.changer.insert(type: 0) == .tube)
        line.changer.enable(0)
        line.run(until: line.now + 60 * Self.ms)
        #expect(!line.host.isStill, "a tube moved: not still until quiet again")
        line.run(until: line.now + 500 * Self.ms)
        #expect(line.host.isStill)
        line.carry(line.host.dispense(type: 1, count: 2, now: line.now).outputs)
        line.changer.enable(0x003F)
        #expect(line.changer.insert(type: 1) == .tube)
        line.changer.enable(0)
        _ = Self.pay(&line, until: line.now + 2_000 * Self.ms)
        #expect(Self.dispensed(line).last?.disturbed == true)
    }

    @Test("a TUBE STATUS that cannot be read, or that does not count the tube paid from, is not taken as the count")
    func unreadableTubesNotCounted() {
        var line = Self.held()
        let before = line.changer.tubes[2]
        line.carry(line.host.dispense(type: 2, count: 1, now: line.now).outputs)
        line.changer.tubeStatusBytes = 3  // counts only the tubes of types 0 and 1
        _ = Self.pay(&line, until: line.now + 2_000 * Self.ms)
        #expect(Self.dispensed(line).isEmpty, "counted from a reply that does not say")
        #expect(line.host.isDispensing)
        line.changer.tubeStatusBytes = nil
        line.run(until: line.now + 500 * Self.ms)
        #expect(Self.dispensed(line).last?.tubes[2] == before - 1)
    }

    private static func paidValue(_ line: Line) -> [MDBValuePayout] {
        line.events.compactMap { if case .paidValue(let payout) = $0 { payout } else { nil } }
    }

    @Test("level 3's alternative payout: the changer chooses the coins, the host polls the value to the end, reads PAYOUT STATUS, and counts the tubes")
    func alternativePayout() throws {
        var line = Self.held(alternativePayout: true)
        #expect(line.host.paysValue)
        let before = line.changer.tubes
        // 85 cents in scaled units of 5: the changer's own choice, largest first, is 50+20+10+5.
        let (accepted, outputs) = line.host.payValue(scaled: 17, now: line.now)
        #expect(accepted)
        line.carry(outputs)
        #expect(!line.host.payValue(scaled: 1, now: line.now).accepted, "one payout at a time")
        #expect(!line.host.dispense(type: 0, count: 1, now: line.now).accepted, "no DISPENSE beside it")
        #expect(line.host.isDispensing)
        let paid = Self.pay(&line, until: line.now + 3_000 * Self.ms)
        #expect(paid == 4)
        let counted = Self.paidValue(line)
        try #require(counted.count == 1)
        let outcome = counted[0]
        // The truth: the changer's tubes, read by the test, not by the host.
        let fall = (0..<16).map { before[$0] - line.changer.tubes[$0] }
        #expect(fall.prefix(4) == [1, 1, 1, 1])
        #expect(outcome.tubes.counts == line.changer.tubes)
        #expect(outcome.status?.counts == fall, "PAYOUT STATUS says what the tubes' fall says")
        #expect(outcome.scaledValue == 17 && !outcome.jammed && !outcome.disturbed && !outcome.timedOut)
        #expect(!line.host.isDispensing)
        // Value polls took turns with POLLs: the changer answered both while paying.
        #expect(line.host.isRunning)
    }

    @Test("an alternative payout that jams is counted short with the jam; one a reset stops is counted from the new setup's tubes, as disturbed")
    func alternativePayoutJamAndReset() {
        var line = Self.held(alternativePayout: true)
        var before = line.changer.tubes
        line.carry(line.host.payValue(scaled: 17, now: line.now).outputs)
        let paid = Self.pay(&line, until: line.now + 3_000 * Self.ms) { paid, changer in if paid == 2 { changer.jamPayout() } }
        #expect(paid == 2)
        #expect(Self.paidValue(line).last?.jammed == true)
        #expect(Self.paidValue(line).last?.tubes.counts == line.changer.tubes)
        #expect((0..<16).map { before[$0] - line.changer.tubes[$0] }.reduce(0, +) == 2)

        before = line.changer.tubes
        line.carry(line.host.payValue(scaled: 17, now: line.now).outputs)
        let paidBeforeReset = Self.pay(&line, until: line.now + 4_000 * Self.ms) { paid, changer in if paid == 1 && changer.valuePayout != nil { changer.reset() } }
        #expect(paidBeforeReset == 1)
        #expect(Self.paidValue(line).count == 2)
        #expect(Self.paidValue(line).last?.disturbed == true, "counted across a new setup: not believed if short")
        #expect(Self.paidValue(line).last?.tubes.counts == line.changer.tubes)
        #expect((0..<16).map { before[$0] - line.changer.tubes[$0] }.reduce(0, +) == 1)
        #expect(line.host.isRunning)
    }

    @Test("a PAYOUT whose answer is lost is still counted from the tubes, never sent again")
    func lostAlternativePayoutAnswer() {
        var line = Self.held(alternativePayout: true)
        let before = line.changer.tubes
        var outputs = line.host.payValue(scaled: 3, now: line.now).outputs
        var sent = 0
        while let output = outputs.first {
            outputs.removeFirst()
            if case .send(let command) = output, command.text.hasPrefix("R,0F,02") {
                sent += 1
                _ = line.changer.handle(command.text[...])
            } else {
                line.carry([output])
            }
        }
        #expect(sent == 1)
        let paid = Self.pay(&line, until: line.now + 3_000 * Self.ms)
        #expect(paid == 2, "15 cents: a dime and a nickel")
        #expect(Self.paidValue(line).last?.tubes.counts == line.changer.tubes)
        #expect((0..<16).map { before[$0] - line.changer.tubes[$0] }.reduce(0, +) == 2, "paid once: the PAYOUT was not repeated")
    }

    @Test("a changer that does not offer the alternative payout, or is level 2, is not asked for one")
    func noAlternativePayout() {
        let noFeature = MDBChangerDevice.Settings()
        var levelTwo = MDBChangerDevice.Settings()
        levelTwo.level = 2
        for settings in [noFeature, levelTwo] {
            var line = Line()
            line.changer = MDBChangerDevice(settings: settings)
            line.carry(line.host.start(now: 0))
            line.carry(line.host.setAllowed(0x003F, now: 0))
            line.run(until: 1_000 * Self.ms)
            #expect(line.host.isRunning)
            #expect(!line.host.paysValue)
            #expect(!line.host.payValue(scaled: 3, now: line.now).accepted)
        }
    }

    @Test("a payout counted from a new setup's tube read: the ready that follows, carrying that read, is no fresh count for the payer")
    func setupReadIsNotARecount() throws {
        // A reset cut the payout: the host counted it from the setup's TUBE STATUS, then said
        // ready with the same tubes. A count short by a lagging sensor asks for a fresh count,
        // and the ready's is not one (the crash suite's seed 7 believed it and under-recorded).
        var line = Self.held(alternativePayout: true)
        line.carry(line.host.payValue(scaled: 17, now: line.now).outputs)
        _ = Self.pay(&line, until: line.now + 4_000 * Self.ms) { paid, changer in
            if paid == 2 && changer.valuePayout != nil {
                changer.reset()
                changer.tubeSensorLag = (2, 1)
            }
        }
        var payer = MDBChangerPayer()
        var readsAtCount: UInt64?
        var readsAtReady: UInt64?
        for event in line.events {
            payer.take(event)
            if case .paidValue = event { readsAtCount = payer.tubeReads }
            if case .ready = event, readsAtCount != nil, readsAtReady == nil { readsAtReady = payer.tubeReads }
        }
        let counted = try #require(readsAtCount)
        #expect(Self.paidValue(line).last?.disturbed == true)
        #expect(readsAtReady == counted, "the ready after the setup that counted the payout is the same read")
        // The next TUBE STATUS is a fresh count, and counts the tube right.
        line.carry(line.host.countTubes(now: line.now))
        line.run(until: line.now + 200 * Self.ms)
        for event in line.events.suffix(from: line.events.lastIndex { if case .ready = $0 { true } else { false } }! + 1) { payer.take(event) }
        #expect(payer.tubeReads > counted)
        #expect(line.host.tubes?.counts == line.changer.tubes)
    }

    @Test("a changer that answers POLLs but never a value poll is not waited on for ever: the payout is counted, marked timed out")
    func valuePollNeverAnswered() throws {
        var line = Self.held(alternativePayout: true)
        var outputs = line.host.payValue(scaled: 3, now: line.now).outputs
        // Every PAYOUT VALUE POLL is lost on the line from here on; everything else gets through.
        var paid = 0
        let end = line.now + 30_000 * Self.ms
        while line.now < end {
            while let output = outputs.first {
                outputs.removeFirst()
                if case .send(let command) = output, command.text.hasPrefix("R,0F,04") {
                    line.now += Self.ms
                    continue  // no reply: the host times out and fences
                }
                line.carry([output])
            }
            line.now += 80 * Self.ms
            if line.changer.isPaying, line.changer.payOne() != nil { paid += 1 }
            outputs = line.host.tick(now: line.now)
        }
        #expect(paid == 2, "15 cents: a dime and a nickel")
        let counted = try #require(Self.paidValue(line).last, "never counted: the host waited for ever")
        #expect(counted.timedOut && counted.tubes.counts == line.changer.tubes)
        #expect(!line.host.isDispensing)
    }

    @Test("a long alternative payout (41 coins at 400 ms, past the 10 s timeout) is counted once the changer stops, not while it still pays")
    func longAlternativePayout() throws {
        var line = Self.held(alternativePayout: true)
        line.carry(line.host.payValue(scaled: 255, now: line.now).outputs)
        var paid = 0
        var next = line.now + 400 * Self.ms
        let end = line.now + 30_000 * Self.ms
        while next <= end {
            line.run(until: next)
            if line.changer.isPaying, line.changer.payOne() != nil { paid += 1 }
            next += 400 * Self.ms
        }
        line.run(until: end)
        // The changer's choice from tubes of 18, 10, 8 and 5: every coin in them, 41.
        #expect(paid == 41 && line.changer.tubes.prefix(4) == [0, 0, 0, 0])
        let counted = try #require(Self.paidValue(line).last)
        #expect(Self.paidValue(line).count == 1)
        #expect(counted.tubes.counts.prefix(4) == [0, 0, 0, 0], "counted after the last coin, not at 10 s")
        #expect(!counted.timedOut)
    }

    @Test("during an alternative payout, a TUBE STATUS that counts fewer tubes than the count before it is not taken as the outcome")
    func valuePayoutFewerTubesNotCounted() throws {
        var line = Self.held(alternativePayout: true)
        let before = line.changer.tubes
        line.carry(line.host.payValue(scaled: 17, now: line.now).outputs)
        line.changer.tubeStatusBytes = 4  // counts only the tubes of types 0 and 1
        _ = Self.pay(&line, until: line.now + 3_000 * Self.ms)
        #expect(Self.paidValue(line).isEmpty, "counted from a reply that leaves tubes out (they would count as emptied)")
        line.changer.tubeStatusBytes = nil
        line.run(until: line.now + 500 * Self.ms)
        let counted = try #require(Self.paidValue(line).last)
        #expect((0..<16).map { before[$0] - counted.tubes.counts[$0] }.prefix(4) == [1, 1, 1, 1])
    }
}
