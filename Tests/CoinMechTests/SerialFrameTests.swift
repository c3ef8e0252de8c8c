import CoinMechSerial
import Testing

@Suite("Serial line protocol: encoding, checksums, parsing and resynchronisation")
struct SerialFrameTests {
    // Checksums computed independently (Python: XOR of the bytes between $ and *).
    @Test("sentences encode with an XOR checksum and CR LF", arguments: [
        (SerialFrame.reading(deviceSeq: 12, diameterMM: 24.26, weightG: 5.67, thicknessMM: 1.75), "$CMR,12,24.260,5.670,1.750*44\r\n"),
        (.reading(deviceSeq: 1, diameterMM: 19.05, weightG: 2.5, thicknessMM: nil), "$CMR,1,19.050,2.500*7B\r\n"),
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
        #expect(events == [.frame(.reading(deviceSeq: 12, diameterMM: 24.26, weightG: 5.67, thicknessMM: 1.75))])
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

    @Test("non-numeric fields are malformed, not crashes; nan passes through for the sanity guard")
    func fields() {
        var parser = FrameParser()
        var events: [FrameEvent] = []
        let bad = "CMR,1,abc,5.0"
        let nan = "CMR,2,nan,5.000"
        parser.feed(Array("$\(bad)*\(hex(bad))\r\n$\(nan)*\(hex(nan))\r\n".utf8)) { events.append($0) }
        #expect(events.first == .error(.malformed(sentence: "$\(bad)*\(hex(bad))", reason: "bad diameter 'abc'")))
        guard case .frame(.reading(2, let diameter, 5.0, nil))? = events.last else {
            Issue.record("expected a reading, got \(events)")
            return
        }
        #expect(diameter.isNaN)
    }

    private func hex(_ body: String) -> String {
        let sum = body.utf8.reduce(UInt8(0), ^)
        let digits = Array("0123456789ABCDEF")
        return String([digits[Int(sum >> 4)], digits[Int(sum & 0xF)]])
    }
}
