import CoinMechMDB
import Testing

/// Golden frames for the MDB adapter line and the coin changer (address 08h), checked by hand
/// against public sources:
/// - the adapter: Qibixx, "MDB generic master API" (docs.qibixx.com/mdb-products/api-generic-master):
///   `M,1` → `m,ACK`; `R,xx[,yyyy]` → `p,ACK`, `p,NACK` or `p,<hex>`; its example `R,14,01`
///   puts the whole address+command byte in `xx`;
/// - the changer's bytes: MDB/ICP, section 5 (coin acceptor/changer), as quoted by
///   maehw/mdb-coin-controller's README (an MEI Cashflow CF7900 on a Qibixx MDB-USB: its SETUP,
///   IDENTIFICATION, COIN TYPE and DISPENSE tables) and by temoto/vender
///   (hardware/mdb/coin/coin.go: POLL parsed byte by byte, `1yyyxxxx`, `01yyxxxx`, `001xxxxx`,
///   status codes 01h–0Dh; dispense.go: DISPENSE is `count<<4 | type`).
/// Field replies from temoto/vender issues #12 and #23: `02 04 07` in one POLL.
@Suite("MDB: the adapter's lines and the coin changer's frames")
struct MDBFrameTests {
    private func data(_ line: String) throws -> [UInt8] {
        guard case .peripheral(.data(let bytes)) = try MDBAdapterReply(line: line[...]) else {
            Issue.record("\(line) is not peripheral data")
            return []
        }
        return bytes
    }

    @Test("commands are the adapter's ASCII lines: the command byte holds the changer's address, data follows a comma")
    func commandLines() throws {
        func text(_ command: MDBChangerCommand) throws -> String { MDBAdapterCommand.transaction(try command.transaction()).text }
        #expect(MDBAdapterCommand.masterMode(true).line == Array("M,1\n".utf8))
        #expect(MDBAdapterCommand.busReset.text == "R,RESET")
        #expect(MDBAdapterCommand.responseTimeout(milliseconds: 100).text == "F,RESPTIMEOUT,100")
        #expect(try text(.reset) == "R,08")
        #expect(try text(.setup) == "R,09")
        #expect(try text(.tubeStatus) == "R,0A")
        #expect(try text(.poll) == "R,0B")
        // Coin enable then manual dispense enable, bit 15 first: types 0-5 and none.
        #expect(try text(.coinType(accept: 0x003F, manualDispense: 0x0000)) == "R,0C,003F0000")
        #expect(try text(.coinType(accept: 0x8001, manualDispense: 0xFFFF)) == "R,0C,8001FFFF")
        // Two coins of type 3: count in the high nibble.
        #expect(try text(.dispense(type: 3, count: 2)) == "R,0D,23")
        #expect(try text(.dispense(type: 15, count: 15)) == "R,0D,FF")
        #expect(try text(.identification) == "R,0F,00")
        #expect(try text(.featureEnable(0x0000_0003)) == "R,0F,0100000003")
        #expect(try text(.payout(scaledValue: 20)) == "R,0F,0214")
        #expect(try text(.payoutStatus) == "R,0F,03")
        #expect(try text(.payoutValuePoll) == "R,0F,04")
        #expect(try text(.diagnostics) == "R,0F,05")
    }

    @Test("an adapter line reads back as the command that wrote it; lines the adapter would not take read as nothing")
    func commandsReadBack() throws {
        let commands: [MDBAdapterCommand] = [.version, .masterMode(true), .masterMode(false), .busReset, .responseTimeout(milliseconds: 250),
                                             .transaction(try MDBChangerCommand.poll.transaction()),
                                             .transaction(try MDBChangerCommand.coinType(accept: 0x003F, manualDispense: 0xFFFF).transaction())]
        for command in commands { #expect(MDBAdapterCommand(line: command.text[...]) == command, "\(command.text)") }
        #expect(MDBAdapterCommand(line: "R,0B\r") == .transaction(MDBTransaction(command: 0x0B)))
        for bad in ["", "R", "R,", "R,0", "R,0B,", "R,0B,5", "R,GG", "M,2", "F,RESPTIMEOUT,5", "X,1"] {
            #expect(MDBAdapterCommand(line: bad[...]) == nil, "\(bad)")
        }
    }

    @Test("a command the bus cannot carry is refused with what to do instead")
    func impossibleCommands() {
        #expect(throws: MDBCommandError.dispenseCountOutOfRange(16)) { try MDBChangerCommand.dispense(type: 1, count: 16).transaction() }
        #expect(throws: MDBCommandError.dispenseCountOutOfRange(0)) { try MDBChangerCommand.dispense(type: 1, count: 0).transaction() }
        #expect(throws: MDBCommandError.coinTypeOutOfRange(16)) { try MDBChangerCommand.dispense(type: 16, count: 1).transaction() }
        #expect(throws: MDBCommandError.payoutOfNothing) { try MDBChangerCommand.payout(scaledValue: 0).transaction() }
        #expect(MDBCommandError.dispenseCountOutOfRange(16).description.contains("split the payout"))
    }

    @Test("a transaction's checksum is the sum of its bytes modulo 256, for a raw 9-bit bus")
    func checksum() throws {
        #expect(try MDBChangerCommand.poll.transaction().checksum == 0x0B)
        // 0C + 00 + 3F + 00 + 3F = 8A
        #expect(try MDBChangerCommand.coinType(accept: 0x003F, manualDispense: 0x003F).transaction().checksum == 0x8A)
        // 0F + 01 + FF×4 = 0x40C → 0C
        #expect(try MDBChangerCommand.featureEnable(0xFFFF_FFFF).transaction().checksum == 0x0C)
        #expect(try MDBChangerCommand.poll.transaction().address == 0x08)
    }

    @Test("the adapter's replies: acknowledgements, no answer, and data as hex")
    func replies() throws {
        #expect(try MDBAdapterReply(line: "m,ACK") == .masterMode(acknowledged: true))
        #expect(try MDBAdapterReply(line: "m,NACK") == .masterMode(acknowledged: false))
        #expect(try MDBAdapterReply(line: "p,ACK") == .peripheral(.ack))
        #expect(try MDBAdapterReply(line: "p,NACK") == .peripheral(.noAnswer))
        #expect(try MDBAdapterReply(line: "p,5306") == .peripheral(.data([0x53, 0x06])))
        #expect(try MDBAdapterReply(line: "p,0b") == .peripheral(.data([0x0B])))
        #expect(try MDBAdapterReply(line: "f,ACK") == .configuration(acknowledged: true))
        #expect(try MDBAdapterReply(line: "v,1.2.3.4,0011AABB") == .version("1.2.3.4,0011AABB"))
        // What a simulated adapter writes reads back as itself.
        for reply: MDBAdapterReply in [.masterMode(acknowledged: false), .configuration(acknowledged: true), .peripheral(.ack),
                                       .peripheral(.noAnswer), .peripheral(.data([0x02, 0x04, 0x07])), .version("1.0,AB")] {
            #expect(try MDBAdapterReply(line: reply.text[...]) == reply)
        }
    }

    @Test("every kind of bad adapter line gets its own error, with the line in it")
    func badReplies() {
        #expect(throws: MDBAdapterError.badHex("p,5G")) { try MDBAdapterReply(line: "p,5G") }
        #expect(throws: MDBAdapterError.badHex("p,530")) { try MDBAdapterReply(line: "p,530") }
        #expect(throws: MDBAdapterError.badHex("p,")) { try MDBAdapterReply(line: "p,") }
        #expect(throws: MDBAdapterError.malformedReply("ACK")) { try MDBAdapterReply(line: "ACK") }
        #expect(throws: MDBAdapterError.malformedReply("m,MAYBE")) { try MDBAdapterReply(line: "m,MAYBE") }
        #expect(throws: MDBAdapterError.unknownReply("c,STATUS,ENABLED")) { try MDBAdapterReply(line: "c,STATUS,ENABLED") }
        #expect(MDBAdapterError.badHex("p,5G").description.contains("'p,5G'"))
    }

    @Test("the line parser splits at LF, drops CR and empty lines, reports bad lines and bounds garbage")
    func lineParser() {
        var parser = MDBAdapterLineParser()
        var events: [MDBAdapterLineParser.Event] = []
        parser.feed(Array("m,ACK\r\n\r\np,0".utf8)) { events.append($0) }
        parser.feed(Array("B\r\np,XY\r\n".utf8)) { events.append($0) }
        #expect(events == [.reply(.masterMode(acknowledged: true)), .reply(.peripheral(.data([0x0B]))), .error(.badHex("p,XY"))])

        events.removeAll()
        let garbage = [UInt8](repeating: UInt8(ascii: "Z"), count: 1000)
        parser.feed(garbage + Array("\r\np,ACK\r\n".utf8)) { events.append($0) }
        #expect(events == [.error(.overlongLine(1001)), .reply(.peripheral(.ack))])
    }

    @Test("SETUP: a level 3 euro changer, scaling 5, types 0-3 to tubes, credits 5c to 2 euro (MEI CF7900)")
    func setup() throws {
        // Z1 03, Z2-Z3 1978, Z4 05, Z5 02, Z6-Z7 000F, Z8-Z13 01 02 04 0A 14 28, Z14-Z23 00.
        let setup = try MDBChangerSetup(reply: try data("p,0319780502000F0102040A142800000000000000000000"))
        #expect(setup.level == 3)
        #expect(setup.countryCode == 0x1978)
        #expect(setup.iso4217Number == 978)
        #expect(setup.scalingFactor == 5 && setup.decimalPlaces == 2)
        #expect((0..<6).map { setup.valueMinor(ofType: $0) } == [5, 10, 20, 50, 100, 200])
        #expect(setup.valueMinor(ofType: 6) == nil)
        #expect(setup.valueMinor(ofType: 16) == nil)
        #expect((0..<6).map(setup.routesToTube) == [true, true, true, true, false, false])
        // Fewer credit bytes than 16 types: the rest are unused. A US changer's telephone code.
        let short = try MDBChangerSetup(reply: [0x02, 0x00, 0x01, 0x05, 0x02, 0x00, 0x03, 0x01, 0x02, 0x05, 0xFF])
        #expect(short.iso4217Number == nil)
        #expect(short.valueMinor(ofType: 2) == 25)
        #expect(short.valueMinor(ofType: 3) == nil, "FFh is a vend token, not money")
        #expect(short.valueMinor(ofType: 4) == nil)
    }

    @Test("SETUP replies MDB does not allow are refused with the field")
    func badSetup() {
        #expect(throws: MDBReplyError.tooShort(reply: "SETUP", bytes: 6, needed: 7)) { try MDBChangerSetup(reply: [3, 0x19, 0x78, 5, 2, 0]) }
        #expect(throws: MDBReplyError.tooLong(reply: "SETUP", bytes: 24, maximum: 23)) {
            try MDBChangerSetup(reply: [3, 0x19, 0x78, 5, 2, 0, 0x0F] + [UInt8](repeating: 1, count: 17))
        }
        #expect(throws: MDBReplyError.badField(reply: "SETUP", field: "feature level", value: "1")) { try MDBChangerSetup(reply: [1, 0x19, 0x78, 5, 2, 0, 0x0F]) }
        #expect(throws: MDBReplyError.badField(reply: "SETUP", field: "scaling factor", value: "0")) { try MDBChangerSetup(reply: [3, 0x19, 0x78, 0, 2, 0, 0x0F]) }
    }

    @Test("TUBE STATUS: full flags by type, counts per type, unsent types empty, full-but-empty tubes suspect")
    func tubeStatus() throws {
        let tubes = try MDBTubeStatus(reply: try data("p,0000120A0805"))
        #expect(tubes.counts.prefix(5) == [18, 10, 8, 5, 0])
        #expect(tubes.counts.count == 16)
        #expect(tubes.full == 0)
        let jammed = try MDBTubeStatus(reply: [0x00, 0x05, 0x00, 0x10, 0x07])
        #expect(jammed.isFull(0) && !jammed.isFull(1) && jammed.isFull(2))
        #expect(jammed.suspectTubes == [0])
        #expect(throws: MDBReplyError.tooShort(reply: "TUBE STATUS", bytes: 1, needed: 2)) { try MDBTubeStatus(reply: [0]) }
    }

    @Test("POLL: every event of a reply in order: deposits with their routing, manual dispenses, slugs, statuses")
    func poll() {
        // 53 06: deposited, routing 01 (tube), type 3, 6 now in its tube.
        #expect(MDBPollReply(data: [0x53, 0x06]).events == [.deposited(type: 3, routing: .tube, tubeCount: 6)])
        // 41 00: type 1 to the cash box; 72 04: type 2 rejected.
        #expect(MDBPollReply(data: [0x41, 0x00, 0x72, 0x04]).events
            == [.deposited(type: 1, routing: .cashBox, tubeCount: 0), .deposited(type: 2, routing: .reject, tubeCount: 4)])
        // A2 03: 1 010 0010, two coins of type 2 paid by hand, 3 left.
        #expect(MDBPollReply(data: [0xA2, 0x03]).events == [.dispensedManually(type: 2, count: 2, tubeCount: 3)])
        // 23: three slugs; 0B: the changer was reset.
        #expect(MDBPollReply(data: [0x23, 0x0B]).events == [.slugs(count: 3), .status(.changerWasReset)])
        // A field reply: payout busy, defective tube sensor and tube jam at once.
        #expect(MDBPollReply(data: [0x02, 0x04, 0x07]).events == [.status(.payoutBusy), .status(.defectiveTubeSensor), .status(.tubeJam)])
        #expect(MDBPollReply(data: [0x0D, 0x03]).events == [.status(.possibleCreditedCoinRemoval), .status(.noCredit)])
        #expect(MDBPollReply(data: [0x0E]).events == [.unknownStatus(0x0E)])
        #expect(MDBPollReply(data: []).events == [])
        #expect(MDBChangerEvent.Routing.tube.isKept && MDBChangerEvent.Routing.cashBox.isKept && !MDBChangerEvent.Routing.reject.isKept)
        #expect(MDBChangerStatus.allCases.count == 13)
    }

    @Test("a POLL reply cut inside a two-byte event, or too long, keeps every event read before the fault, and names it")
    func faultyPoll() {
        let cut = MDBPollReply(data: [0x53, 0x06, 0x23, 0x41])
        #expect(cut.events == [.deposited(type: 3, routing: .tube, tubeCount: 6), .slugs(count: 3)])
        #expect(cut.problem == .truncatedEvent(0x41))
        #expect(MDBPollReply(data: [0x92]).problem == .truncatedEvent(0x92))
        let long = MDBPollReply(data: [UInt8](repeating: 0x02, count: 17))
        #expect(long.events.count == 17)
        #expect(long.problem == .tooLong(reply: "POLL", bytes: 17, maximum: 16))
        #expect(MDBPollReply(data: [0x53, 0x06]).problem == nil)
    }

    @Test("IDENTIFICATION: MEI, model CF7900MDB, software 0127, alternative payout, extended diagnostics and manual fill")
    func identification() throws {
        let reply: [UInt8] = Array("MEI".utf8) + Array("000000123456".utf8) + Array("CF7900MDB   ".utf8) + [0x01, 0x27, 0x00, 0x00, 0x00, 0x07]
        let identity = try MDBChangerIdentity(reply: reply)
        #expect(identity.manufacturer == "MEI")
        #expect(identity.serialNumber == "000000123456")
        #expect(identity.model == "CF7900MDB")
        #expect(identity.softwareVersion == 0x0127)
        #expect(identity.features == [.alternativePayout, .extendedDiagnostics, .controlledManualFillAndPayout])
        #expect(throws: MDBReplyError.tooShort(reply: "IDENTIFICATION", bytes: 32, needed: 33)) { try MDBChangerIdentity(reply: Array(reply.prefix(32))) }
    }

    @Test("PAYOUT STATUS: coins per type, valued by the changer's own credits")
    func payoutStatus() throws {
        let setup = try MDBChangerSetup(reply: [0x03, 0x19, 0x78, 0x05, 0x02, 0x00, 0x0F, 0x01, 0x02, 0x04, 0x0A, 0x14, 0x28])
        // Two 20c and two 50c coins: 140 cents.
        let status = try MDBPayoutStatus(reply: [0x00, 0x00, 0x02, 0x02])
        #expect(status.counts.prefix(4) == [0, 0, 2, 2])
        #expect(status.valueMinor(setup) == 140)
    }
}
