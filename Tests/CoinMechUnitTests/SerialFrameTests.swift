import CoinMechSerial
import Testing

@Suite("Serial line protocol: encoding, checksums, parsing and resynchronisation")
struct SerialFrameTests {
    // Checksums computed independently (Python: XOR of the bytes between $ and *).
    @Test("sentences encode with an XOR checksum and CR LF", arguments: [
        (SerialFrame.reading(SensorReading(deviceSeq: 12, diameterMM: 24.26, weightG: 5.67, thicknessMM: 1.75)), "$CMR,12,24.260,5.670,1.750*44\r\n"),
        (.reading(SensorReading(deviceSeq: 1, diameterMM: 19.05, weightG: 2.5)), "$CMR,1,19.050,2.500*7B\r\n"),
        (.reading(SensorReading(deviceSeq: 7, diameterMM: 24.26, weightG: 5.67, mechMilliseconds: 1_000_123)), "$CMR,7,24.260,5.670,,1000123*40\r\n"),
        (.reading(SensorReading(deviceSeq: 7, diameterMM: 24.26, weightG: 5.67, thicknessMM: 1.75, mechMilliseconds: 1_000_123)),
         "$CMR,7,24.260,5.670,1.750,1000123*6D\r\n"),
        (.confirmation(deviceSeq: 12, fate: .stored), "$CMC,12,S*1D\r\n"),
        (.confirmation(deviceSeq: 12, fate: .returned), "$CMC,12,R*1C\r\n"),
        (.query(boot: 3, deviceSeq: 12), "$CMQ,3,12*6F\r\n"),
        (.journal(boot: 3, deviceSeq: 12, fate: .unknown), "$CMJ,3,12,U*0D\r\n"),
        (.journal(boot: 2, deviceSeq: 5, fate: .stored), "$CMJ,2,5,S*3C\r\n"),
        (.hello, "$CMH*46\r\n"),
        (.status(.session, detail: "3"), "$CMS,SESSION,3*30\r\n"),
        (.status(.powerUp, detail: "4"), "$CMS,POWERUP,4*33\r\n"),
        (.decision(deviceSeq: 12, accept: true), "$CMD,12,A*08\r\n"),
        (.decision(deviceSeq: 12, accept: false), "$CMD,12,R*1B\r\n"),
        (.status(.powerUp, detail: nil), "$CMS,POWERUP*2B\r\n"),
        (.status(.jam, detail: "cleared"), "$CMS,JAM,cleared*63\r\n"),
        (.inhibit(true), "$CMI,1*5A\r\n"),
    ])
    func encoding(frame: SerialFrame, text: String) {
        #expect(frame.encoded == text)
        var parser = FrameParser()
        var events: [FrameEvent] = []
        parser.feed(Array(text.utf8)) { events.append($0) }
        #expect(events == [.frame(frame)])
    }

    @Test("garbage between sentences is counted and skipped; parsing resumes at the next $")
    func garbage() {
        var parser = FrameParser()
        var events: [FrameEvent] = []
        let stream: [UInt8] = [0x00, 0xFF, 0x41] + Array("$CMD,12,A*08\r\n".utf8) + Array("noise".utf8) + Array("$CMD,12,R*1B\r\n".utf8)
        parser.feed(stream) { events.append($0) }
        #expect(events == [
            .error(.garbage(byteCount: 3)), .frame(.decision(deviceSeq: 12, accept: true)),
            .error(.garbage(byteCount: 5)), .frame(.decision(deviceSeq: 12, accept: false)),
        ])
        #expect(parser.errors.garbageBytes == 8)
    }

    @Test("a sentence split across reads is put back together")
    func splitAcrossReads() {
        var parser = FrameParser()
        var events: [FrameEvent] = []
        let bytes = Array("$CMR,12,24.260,5.670,1.750*44\r\n".utf8)
        for chunk in [bytes[..<5], bytes[5..<20], bytes[20...]] { parser.feed(chunk) { events.append($0) } }
        #expect(events == [.frame(.reading(SensorReading(deviceSeq: 12, diameterMM: 24.26, weightG: 5.67, thicknessMM: 1.75)))])
    }

    @Test("bad checksum, truncated, overlong and malformed sentences are reported and skipped")
    func brokenSentences() {
        var parser = FrameParser()
        var events: [FrameEvent] = []
        let stream = "$CMD,12,A*09\r\n" + "$CMR,5,24.2" + "$CMD,12,A*08\r\n" + "$CMR," + String(repeating: "9", count: 120)
            + "*00\r\n" + "$XYZ,1*\(hex("XYZ,1"))\r\n" + "$CMD,7,A*08\r\n" + "$CMD,12,A\r\n" + "$CMD,12,R*1B\r\n"
        parser.feed(Array(stream.utf8)) { events.append($0) }
        #expect(events == [
            .error(.badChecksum(sentence: "$CMD,12,A*09")),
            .error(.truncated(sentence: "$CMR,5,24.2")),
            .frame(.decision(deviceSeq: 12, accept: true)),
            .error(.overlong(byteCount: 129)),  // "$CMR," + 120 digits + "*00\r"
            .error(.malformed(sentence: "$XYZ,1*\(hex("XYZ,1"))", reason: "unknown sentence type")),
            .error(.badChecksum(sentence: "$CMD,7,A*08")),
            .error(.malformed(sentence: "$CMD,12,A", reason: "no *HH checksum")),
            .frame(.decision(deviceSeq: 12, accept: false)),
        ])
        #expect(parser.errors.badChecksums == 2)
        #expect(parser.errors.truncated == 1)
        #expect(parser.errors.overlong == 1)
        #expect(parser.errors.malformed == 2)
        #expect(parser.errors.sentences == 6)
    }

    @Test("non-numeric, NaN, infinite, negative and absurd figures are malformed: counted, never a reading", arguments: [
        ("CMR,1,abc,5.0", "bad diameter 'abc'"),
        ("CMR,2,nan,5.000", "diameter 'nan' is not a measurement (0 to 500)"),
        ("CMR,3,24.26,inf", "weight 'inf' is not a measurement (0 to 1000)"),
        ("CMR,4,24.26,-5.670", "weight '-5.670' is not a measurement (0 to 1000)"),
        ("CMR,5,-inf,5.670", "diameter '-inf' is not a measurement (0 to 500)"),
        ("CMR,6,24.26,5.67,1e9", "thickness '1e9' is not a measurement (0 to 100)"),
        ("CMR,7,9999,5.67", "diameter '9999' is not a measurement (0 to 500)"),
        ("CMR,8,24.26,5.67,1.75,-3", "bad mech clock '-3'"),
        ("CMC,8,U", "CMC takes devseq and S or R"),
        ("CMJ,1,8,X", "CMJ takes boot, devseq and S, R or U"),
    ])
    func badFigures(body: String, reason: String) {
        var parser = FrameParser()
        var events: [FrameEvent] = []
        parser.feed(Array("$\(body)*\(hex(body))\r\n".utf8)) { events.append($0) }
        #expect(events == [.error(.malformed(sentence: "$\(body)*\(hex(body))", reason: reason))])
        #expect(parser.errors.malformed == 1)
    }

    private func hex(_ body: String) -> String {
        let sum = body.utf8.reduce(UInt8(0), ^)
        let digits = Array("0123456789ABCDEF")
        return String([digits[Int(sum >> 4)], digits[Int(sum & 0xF)]])
    }
}
