/// Turns the bytes of a ccTalk line into frames, the way the specification's receiver works:
///
/// - a frame is delimited by its length byte; its checksum (or CRC) must hold;
/// - 50 ms without a byte resets the receiver: an unfinished frame is dropped;
/// - a frame must start with one of `destinations` (the receiver's own address, and the
///   host's for its echo, or the broadcast address for a device): other bytes are skipped as
///   garbage; after a bad checksum the receiver looks for a frame starting inside the bad one
///   (noise before a reply), else drops it whole. Without that filter a run of five zero bytes
///   in a credit buffer would itself be a valid frame;
/// - on a single-wire bus the host reads back every byte it sends: `expectEcho` names them,
///   and they are discarded as they come back. If something else comes first, the echo is
///   reported missing and the byte is read as the start of a frame.
///
/// Feed it whatever `read` returned with the time it was read (CLOCK_MONOTONIC ns or any
/// simulated clock); it keeps unfinished frames between calls.
public struct CCTalkParser: Sendable {
    public enum Event: Sendable, Hashable {
        case frame(CCTalkFrame)
        case error(CCTalkLineError)
    }

    public let checksum: CCTalkChecksum
    /// Addresses a frame may be sent to.
    public let destinations: Set<UInt8>
    /// Silence that resets the receiver (50 ms in the specification).
    public let interByteTimeout: UInt64
    public private(set) var counts = CCTalkLineCounts()

    private var buffer: [UInt8] = []
    private var lastByteAt: UInt64?
    private var echo: [UInt8] = []
    private var echoMatched = 0
    private var echoSince: UInt64 = 0
    private var garbage = 0

    public static let defaultInterByteTimeout: UInt64 = 50_000_000

    public init(checksum: CCTalkChecksum, destinations: Set<UInt8>, interByteTimeout: UInt64 = Self.defaultInterByteTimeout) {
        self.checksum = checksum
        self.destinations = destinations
        self.interByteTimeout = interByteTimeout
        buffer.reserveCapacity(CCTalkFrame.maximumData + CCTalkFrame.overhead)
    }

    /// Nothing unfinished: no partial frame, no echo still expected.
    public var isIdle: Bool { buffer.isEmpty && echo.isEmpty }

    /// When `expire` will next have something to drop, if nothing arrives before.
    public var expiresAt: UInt64? {
        var due: UInt64?
        if !buffer.isEmpty, let last = lastByteAt { due = last &+ interByteTimeout &+ 1 }
        if !echo.isEmpty {
            let since = echoMatched > 0 ? max(echoSince, lastByteAt ?? echoSince) : echoSince
            due = min(due ?? .max, since &+ interByteTimeout &+ 1)
        }
        return due
    }

    /// The host has just written `bytes`; on a single-wire bus they come back first.
    public mutating func expectEcho(_ bytes: [UInt8], at time: UInt64) {
        echo = bytes
        echoMatched = 0
        echoSince = time
    }

    /// Stops expecting an echo (the line turned out not to give one).
    public mutating func cancelEcho() {
        echo = []
        echoMatched = 0
    }

    /// Parses `bytes`, read at `time`, reporting frames and errors in stream order.
    public mutating func feed(_ bytes: some Sequence<UInt8>, at time: UInt64, _ emit: (Event) -> Void) {
        expire(now: time, emit)
        var any = false
        for byte in bytes {
            any = true
            if !echo.isEmpty {
                if byte == echo[echoMatched] {
                    echoMatched += 1
                    counts.echoBytes += 1
                    if echoMatched == echo.count { cancelEcho() }
                    continue
                }
                report(.echoMissing(byteCount: echo.count - echoMatched), emit)
                cancelEcho()
            }
            buffer.append(byte)
            scan(emit)
        }
        flushGarbage(emit)
        if any { lastByteAt = time }
    }

    /// Drops an unfinished frame (and an echo that never came) once the line has been silent
    /// for the inter-byte timeout. `feed` does this itself; call it when no bytes come.
    public mutating func expire(now: UInt64, _ emit: (Event) -> Void) {
        if let last = lastByteAt, now &- last > interByteTimeout, !buffer.isEmpty {
            flushGarbage(emit)
            report(.timeout(byteCount: buffer.count), emit)
            buffer.removeAll(keepingCapacity: true)
        }
        // An echo starts coming back at once and then byte after byte.
        let echoQuietSince = echoMatched > 0 ? max(echoSince, lastByteAt ?? echoSince) : echoSince
        if !echo.isEmpty, now &- echoQuietSince > interByteTimeout {
            report(.echoMissing(byteCount: echo.count - echoMatched), emit)
            cancelEcho()
        }
    }

    private mutating func scan(_ emit: (Event) -> Void) {
        while let first = buffer.first {
            if !destinations.contains(first) {
                garbage += 1
                buffer.removeFirst()
                continue
            }
            guard buffer.count >= 2 else { return }
            let total = CCTalkFrame.length(dataCount: Int(buffer[1]))
            guard buffer.count >= total else { return }
            if let frame = CCTalkFrame.decode(buffer[0..<total], checksum: checksum) {
                flushGarbage(emit)
                counts.frames += 1
                emit(.frame(frame))
                buffer.removeFirst(total)
                continue
            }
            // Not a frame: garbage before one that starts inside it, or a frame with a bad checksum.
            if let start = (1..<total).first(where: frameStarts(at:)) {
                garbage += start
                buffer.removeFirst(start)
                continue
            }
            flushGarbage(emit)
            report(.badChecksum(bytes: Array(buffer[0..<total])), emit)
            buffer.removeFirst(total)
        }
    }

    /// A complete, valid frame starts at `offset` of the buffer.
    private func frameStarts(at offset: Int) -> Bool {
        guard buffer.count >= offset + 2, destinations.contains(buffer[offset]) else { return false }
        let total = CCTalkFrame.length(dataCount: Int(buffer[offset + 1]))
        guard buffer.count >= offset + total else { return false }
        return CCTalkFrame.decode(buffer[offset..<(offset + total)], checksum: checksum) != nil
    }

    private mutating func flushGarbage(_ emit: (Event) -> Void) {
        guard garbage > 0 else { return }
        report(.garbage(byteCount: garbage), emit)
        garbage = 0
    }

    private mutating func report(_ error: CCTalkLineError, _ emit: (Event) -> Void) {
        counts.count(error)
        emit(.error(error))
    }
}
