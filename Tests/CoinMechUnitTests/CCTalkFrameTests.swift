import CoinMechCCTalk
import Testing

/// The specification's golden frames, byte for byte, and checksum vectors computed apart from
/// this code: the 8-bit checksums by `(-sum(bytes)) % 256` in Python, the CRCs by Python's
/// `binascii.crc_hqx(bytes, 0)` (CRC-16/XMODEM: polynomial 0x1021, initial value 0), which
/// shares no code with `CCTalkChecksum.crc16`.
@Suite("ccTalk frames: golden frames, checksums, typed requests and replies")
struct CCTalkFrameTests {
    static func bytes(_ hex: String) -> [UInt8] { CCTalkFrame.bytes(hex: hex)! }

    static let host = CCTalkFrame.hostAddress
    static let acceptor = CCTalkFrame.coinAcceptorAddress

    // ccTalk Generic Specification issue 4.7, part 3, appendix 11 (a Money Controls SR5i).
    @Test("the specification's requests encode byte for byte", arguments: [
        (CCTalkRequest.simplePoll, "02 00 01 FE FF"),
        (.serialNumber, "02 00 01 F2 0B"),
        (.coinID(position: 1), "02 01 01 B8 01 43"),
        (.readBufferedCredit, "02 00 01 E5 18"),
    ])
    func goldenRequests(request: CCTalkRequest, hex: String) {
        #expect(request.frame(to: Self.acceptor, from: Self.host).encoded(.simple) == Self.bytes(hex))
        // And the device's receiver reads them back as sent.
        var parser = CCTalkParser(checksum: .simple, destinations: [1, 2])
        var events: [CCTalkParser.Event] = []
        parser.feed(Self.bytes(hex), at: 0) { events.append($0) }
        #expect(events == [.frame(request.frame(to: Self.acceptor, from: Self.host))])
    }

    @Test("the specification's replies decode to what they mean")
    func goldenReplies() throws {
        func answer(_ request: CCTalkRequest, _ hex: String) throws -> CCTalkAnswer {
            let frame = try #require(CCTalkFrame.decode(Self.bytes(hex), checksum: .simple), "\(hex) does not decode")
            #expect(frame.destination == Self.host && frame.source == Self.acceptor)
            #expect(frame.encoded(.simple) == Self.bytes(hex))
            return try request.answer(frame)
        }
        #expect(try answer(.simplePoll, "01 00 02 00 FD") == .reply(.ack))
        #expect(try answer(.serialNumber, "01 03 02 00 4E 61 BC 8F") == .reply(.serialNumber(12_345_678)))
        let coin = try answer(.coinID(position: 1), "01 06 02 00 47 42 32 30 30 41 9B")
        #expect(coin == .reply(.coinID(CoinID("GB200A"))))
        let credit = try answer(.readBufferedCredit, "01 0B 02 00 01 01 05 00 00 00 00 00 00 00 00 EB")
        let buffer = CreditBuffer(counter: 1, results: [.credit(position: 1, sorterPath: 5), .null, .null, .null, .null])
        #expect(credit == .reply(.creditBuffer(buffer)))
        #expect(buffer.results[0].meaning == .credit(position: 1, sorterPath: 5))
    }

    @Test("part 3 appendix 4 prints the 229 request with checksum 18 decimal: that frame is refused")
    func appendixFourChecksum() {
        // Appendix 4's "2 0 1 229 18": 18 decimal is 0x12; the right checksum is 0x18 (24).
        let misprinted: [UInt8] = [2, 0, 1, 229, 18]
        #expect(CCTalkFrame.decode(misprinted, checksum: .simple) == nil)
        #expect(CCTalkChecksum.simple([2, 0, 1, 229]) == 0x18)
        var parser = CCTalkParser(checksum: .simple, destinations: [1, 2])
        var events: [CCTalkParser.Event] = []
        parser.feed(misprinted, at: 0) { events.append($0) }
        #expect(events == [.error(.badChecksum(bytes: misprinted))])
        #expect(parser.counts.badChecksums == 1)
    }

    @Test("8-bit checksums (Python: (-sum(frame)) % 256)", arguments: [
        ("02 02 01 E7 FF 00", 0x15 as UInt8),  // modify inhibit status: positions 1–8
        ("02 02 01 E7 3F 00", 0xD5),           // positions 1–6
        ("02 01 01 E4 01", 0x17),              // modify master inhibit status: accept
        ("01 00 02 00", 0xFD),                 // ACK
        ("01 01 02 00 05", 0xF7),              // a one-byte reply
    ])
    func simpleChecksums(body: String, checksum: UInt8) {
        #expect(CCTalkChecksum.simple(Self.bytes(body)) == checksum)
        #expect((Self.bytes(body) + [checksum]).reduce(0, &+) == 0)
    }

    @Test("CRC-16/CCITT with initial value 0: the catalogue check value")
    func crcCheckValue() {
        #expect(CCTalkChecksum.crc16(Array("123456789".utf8)) == 0x31C3)
        #expect(CCTalkChecksum.crc16([2, 0, 254]) == 0x60B1)
    }

    @Test("CRC-16 frames: low byte in the source slot, high byte last (Python: binascii.crc_hqx)", arguments: [
        (CCTalkFrame(destination: 2, source: 1, header: 254), "02 00 B1 FE 60"),
        (CCTalkFrame(destination: 1, source: 2, header: 0), "01 00 30 00 37"),
        (CCTalkFrame(destination: 2, source: 1, header: 229), "02 00 EB E5 C3"),
        (CCTalkFrame(destination: 1, source: 2, header: 0, data: [1, 1, 5, 0, 0, 0, 0, 0, 0, 0, 0]),
         "01 0B 5E 00 01 01 05 00 00 00 00 00 00 00 00 7F"),
        (CCTalkFrame(destination: 2, source: 1, header: 184, data: [1]), "02 01 DD B8 01 5D"),
        (CCTalkFrame(destination: 2, source: 1, header: 231, data: [0xFF, 0x00]), "02 02 B5 E7 FF 00 8F"),
        (CCTalkFrame(destination: 40, source: 1, header: 1), "28 00 46 01 3F"),
    ])
    func crcFrames(frame: CCTalkFrame, hex: String) throws {
        #expect(frame.encoded(.crc16) == Self.bytes(hex))
        let decoded = try #require(CCTalkFrame.decode(Self.bytes(hex), checksum: .crc16))
        #expect(decoded == CCTalkFrame(destination: frame.destination, source: nil, header: frame.header, data: frame.data))
        // A flipped bit anywhere is caught, and a CRC frame is no simple-checksum frame.
        for index in Self.bytes(hex).indices {
            var broken = Self.bytes(hex)
            broken[index] ^= 0x10
            #expect(CCTalkFrame.decode(broken, checksum: .crc16) == nil)
        }
    }

    @Test("inhibit masks and master inhibit encode as the registers hold them")
    func inhibits() throws {
        let mask = CoinPositionMask(positions: [1, 2, 9, 16])
        #expect(mask.bytes == [0x03, 0x81])
        #expect(CCTalkRequest.setInhibits(enabled: mask).data == [0x03, 0x81])
        #expect(CCTalkRequest.setMasterInhibit(accepting: true).data == [1])
        #expect(CCTalkRequest.setMasterInhibit(accepting: false).data == [0])
        let reply = CCTalkFrame(destination: 1, source: 2, header: 0, data: [0x03, 0x81])
        #expect(try CCTalkRequest.readInhibits.answer(reply) == .reply(.inhibits(mask)))
        let master = CCTalkFrame(destination: 1, source: 2, header: 0, data: [0])
        #expect(try CCTalkRequest.readMasterInhibit.answer(master) == .reply(.masterInhibit(accepting: false)))
    }

    @Test("identification replies are typed")
    func identification() throws {
        func reply(_ request: CCTalkRequest, _ data: [UInt8]) throws -> CCTalkAnswer {
            try request.answer(CCTalkFrame(destination: 1, source: 2, header: 0, data: data))
        }
        #expect(try reply(.equipmentCategory, Array("Coin Acceptor".utf8)) == .reply(.text("Coin Acceptor")))
        #expect(try reply(.manufacturer, Array("MCI ".utf8)) == .reply(.text("MCI")))
        #expect(try reply(.commsRevision, [1, 4, 7]) == .reply(.commsRevision(release: 1, major: 4, minor: 7)))
        #expect(try reply(.selfCheck, [3]) == .reply(.selfCheck(CCTalkFaultCode(code: 3), extra: nil)))
        #expect(try reply(.selfCheck, [8, 2]) == .reply(.selfCheck(CCTalkFaultCode(code: 8), extra: 2)))
        #expect(try reply(.pollingPriority, [2, 20]) == .reply(.pollingPriority(PollingPriority(units: 2, value: 20))))
        #expect(PollingPriority(units: 2, value: 20).milliseconds == 200)
        #expect(PollingPriority(units: 0, value: 0).milliseconds == nil)
        #expect(try reply(.coinID(position: 5), Array("......".utf8)) == .reply(.coinID(.empty)))
        #expect(try CCTalkRequest.simplePoll.answer(CCTalkFrame(destination: 1, source: 2, header: 5)) == .nak)
        #expect(try CCTalkRequest.readBufferedCredit.answer(CCTalkFrame(destination: 1, source: 2, header: 6)) == .busy)
        #expect(throws: CCTalkReplyError(request: .readBufferedCredit, reason: "3 data bytes, expected 11")) {
            try reply(.readBufferedCredit, [1, 2, 3])
        }
        #expect(throws: CCTalkReplyError(request: .requestSerialNumber, reason: "header 7 is not a reply")) {
            try CCTalkRequest.serialNumber.answer(CCTalkFrame(destination: 1, source: 2, header: 7))
        }
    }

    @Test("coin ids: country, value and issue; empty positions")
    func coinIDs() {
        let euro = CoinID("EU200A")
        #expect(euro.country == "EU" && euro.valueCode == "200" && euro.issue == "A" && euro.nominalValue == 200)
        #expect(CoinID("GB005B").nominalValue == 5)
        #expect(CoinID("XX1K0A").nominalValue == 1000)
        #expect(CoinID("XX2K5A").nominalValue == 2500)
        #expect(CoinID("......").isEmpty && CoinID(bytes: [0, 0, 0, 0, 0, 0]).isEmpty)
        #expect(CoinID.standard(currency: "EUR", valueMinor: 20) == CoinID("EU020A"))
        #expect(CoinID.standard(currency: "USD", valueMinor: 25) == CoinID("US025A"))
    }

    @Test("error and fault codes carry the specification's names and a message")
    func names() {
        #expect(CoinAcceptorError(code: 1).name == "Reject coin")
        #expect(CoinAcceptorError(code: 17).name == "Coin going backwards")
        #expect(CoinAcceptorError(code: 17).identifier == "coin_going_backwards")
        #expect(CoinAcceptorError(code: 14).name == "Credit sensor blocked")
        #expect(CoinAcceptorError(code: 14).stopsAcceptance)
        #expect(CoinAcceptorError(code: 20).name == "C.O.S. mechanism activated (coin-on-string)")
        #expect(CoinAcceptorError(code: 2).rejection == .yes)
        #expect(CoinAcceptorError(code: 6).rejection == .possibly)
        #expect(CoinAcceptorError(code: 130).name == "Inhibited coin (type 3)")
        #expect(CoinAcceptorError(code: 99).name == "Unknown error code 99")
        #expect(CCTalkFaultCode(code: 3).name == "Fault on credit sensor")
        #expect(CCTalkFaultCode(code: 30).name == "ROM checksum mismatch")
        #expect(CCTalkFaultCode(code: 0).isFault == false)
        for code in UInt8.min...UInt8.max {
            #expect(!CoinAcceptorError(code: code).message.isEmpty && !CCTalkFaultCode(code: code).message.isEmpty)
        }
    }
}
