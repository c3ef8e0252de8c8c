import CoinMechCCTalk
import Testing

/// The receiver on a byte stream: split reads, garbage, bad checksums, the 50 ms reset, and
/// the single-wire echo.
@Suite("ccTalk receiver: resynchronisation, echo, garbage and the inter-byte timeout")
struct CCTalkParserTests {
    static let ms: UInt64 = 1_000_000
    static let poll = CCTalkRequest.readBufferedCredit.frame(to: 2, from: 1)
    static let ack = CCTalkFrame(destination: 1, source: 2, header: 0)
    static let buffer = CCTalkFrame(destination: 1, source: 2, header: 0, data: [1, 1, 5, 0, 0, 0, 0, 0, 0, 0, 0])

    func parse(_ parser: inout CCTalkParser, _ chunks: [([UInt8], UInt64)]) -> [CCTalkParser.Event] {
        var events: [CCTalkParser.Event] = []
        for (bytes, time) in chunks { parser.feed(bytes, at: time) { events.append($0) } }
        return events
    }

    @Test("a frame split across reads is put back together")
    func split() {
        var parser = CCTalkParser(checksum: .simple, destinations: [1, 2])
        let bytes = Self.buffer.encoded(.simple)
        let events = parse(&parser, [(Array(bytes[..<3]), 0), (Array(bytes[3..<9]), 2 * Self.ms), (Array(bytes[9...]), 4 * Self.ms)])
        #expect(events == [.frame(Self.buffer)])
    }

    @Test("50 ms of silence resets the receiver: the unfinished frame is dropped, the next is read")
    func interByteTimeout() {
        var parser = CCTalkParser(checksum: .simple, destinations: [1, 2])
        let bytes = Self.buffer.encoded(.simple)
        let events = parse(&parser, [(Array(bytes[..<6]), 0), (Self.ack.encoded(.simple), 51 * Self.ms)])
        #expect(events == [.error(.timeout(byteCount: 6)), .frame(Self.ack)])
        #expect(parser.counts.timeouts == 1)
        // Exactly 50 ms is not yet silence.
        var patient = CCTalkParser(checksum: .simple, destinations: [1, 2])
        #expect(parse(&patient, [(Array(bytes[..<6]), 0), (Array(bytes[6...]), 50 * Self.ms)]) == [.frame(Self.buffer)])
        // With no more bytes, expire drops it when the time comes.
        var idle = CCTalkParser(checksum: .simple, destinations: [1, 2])
        _ = parse(&idle, [(Array(bytes[..<4]), 0)])
        #expect(idle.expiresAt == 50 * Self.ms + 1)
        var expired: [CCTalkParser.Event] = []
        idle.expire(now: 40 * Self.ms) { expired.append($0) }
        #expect(expired.isEmpty)
        idle.expire(now: 51 * Self.ms) { expired.append($0) }
        #expect(expired == [.error(.timeout(byteCount: 4))] && idle.isIdle)
    }

    @Test("garbage before a frame is skipped and counted; a frame is found inside a bad one")
    func garbage() {
        var parser = CCTalkParser(checksum: .simple, destinations: [1])
        let events = parse(&parser, [([0xFF, 0x37, 0x00] + Self.ack.encoded(.simple) + [0x99], 0)])
        #expect(events == [.error(.garbage(byteCount: 3)), .frame(Self.ack), .error(.garbage(byteCount: 1))])
        // Noise that looks like a frame start is resolved by the checksum: the frame inside is found.
        var open = CCTalkParser(checksum: .simple, destinations: [1, 2])
        let noisy: [UInt8] = [0x01, 0x03] + Self.ack.encoded(.simple) + [0x00, 0x00]
        let found = parse(&open, [(noisy, 0)])
        // 01 03 … fails its checksum, the ACK starts at 2; the zeros after it start no frame to 1 or 2.
        #expect(found == [.error(.garbage(byteCount: 2)), .frame(Self.ack), .error(.garbage(byteCount: 2))])
        #expect(open.counts.frames == 1)
    }

    @Test("a frame with a bad checksum is dropped whole; the next one is read")
    func badChecksum() {
        // Five zero bytes are a valid frame to address 0: the receiver must not find one inside
        // a damaged credit buffer, which its destinations (1 and 2) see to.
        var parser = CCTalkParser(checksum: .simple, destinations: [1, 2])
        var broken = Self.buffer.encoded(.simple)
        broken[6] ^= 0x04
        let events = parse(&parser, [(broken + Self.ack.encoded(.simple), 0)])
        #expect(events == [.error(.badChecksum(bytes: broken)), .frame(Self.ack)])
    }

    @Test("the host's own bytes come back first on a single-wire line and are discarded")
    func echo() {
        var parser = CCTalkParser(checksum: .simple, destinations: [1, 2])
        let request = Self.poll.encoded(.simple)
        parser.expectEcho(request, at: 0)
        let events = parse(&parser, [(Array(request[..<2]), 1 * Self.ms), (Array(request[2...]) + Self.buffer.encoded(.simple), 3 * Self.ms)])
        #expect(events == [.frame(Self.buffer)])
        #expect(parser.counts.echoBytes == request.count)
    }

    @Test("no echo on the line: the reply's first byte ends the wait for it")
    func noEcho() {
        var parser = CCTalkParser(checksum: .simple, destinations: [1, 2])
        parser.expectEcho(Self.poll.encoded(.simple), at: 0)
        let events = parse(&parser, [(Self.ack.encoded(.simple), 10 * Self.ms)])
        #expect(events == [.error(.echoMissing(byteCount: 5)), .frame(Self.ack)])
        // And an echo that never comes, with nothing else either, is given up after 50 ms.
        var silent = CCTalkParser(checksum: .simple, destinations: [1, 2])
        silent.expectEcho(Self.poll.encoded(.simple), at: 0)
        var expired: [CCTalkParser.Event] = []
        silent.expire(now: 51 * Self.ms) { expired.append($0) }
        #expect(expired == [.error(.echoMissing(byteCount: 5))])
    }

    @Test("CRC-16 lines frame the same way")
    func crcLine() {
        var parser = CCTalkParser(checksum: .crc16, destinations: [1])
        let reply = Self.buffer.encoded(.crc16)
        let events = parse(&parser, [([0x42] + reply, 0)])
        #expect(events == [.error(.garbage(byteCount: 1)), .frame(CCTalkFrame(destination: 1, source: nil, header: 0, data: Self.buffer.data))])
    }
}
