import CoinMechProtocol
import NIOCore

/// One request line, or the news that a line was too long (it is skipped up to its newline).
enum RequestLine: Sendable, Equatable {
    case line(String)
    case tooLong
}

/// The bytes a client sent and the handler has not taken yet, split into `\n`-terminated lines
/// of at most `maximumLength` bytes. The handler takes a line only when it can answer one, so
/// what waits here is bounded by how far it reads ahead (`ClientLimits.readAheadBytes`), and a
/// client that pipelines without end is pushed back by the socket, not buffered by the daemon.
struct RequestLines {
    let maximumLength: Int
    private var buffer = ByteBuffer()
    /// Inside a line that was too long: dropping bytes until it ends.
    private var skipping = false

    init(maximumLength: Int = ClientProtocol.maximumRequestLength) { self.maximumLength = maximumLength }

    /// Bytes received and not yet taken as lines.
    var bufferedBytes: Int { buffer.readableBytes }

    mutating func append(_ bytes: inout ByteBuffer) {
        if buffer.readableBytes == 0 { buffer.clear() }
        buffer.writeBuffer(&bytes)
    }

    /// The next whole line (CR before its newline removed, invalid UTF-8 replaced), or nil
    /// until more bytes come.
    mutating func next() -> RequestLine? {
        while true {
            let view = buffer.readableBytesView
            guard let newline = view.firstIndex(of: UInt8(ascii: "\n")) else {
                guard buffer.readableBytes > maximumLength else { return nil }
                // Drop what there is; keep dropping until the line ends.
                buffer.moveReaderIndex(forwardBy: buffer.readableBytes)
                defer { skipping = true }
                return skipping ? nil : .tooLong
            }
            let length = newline - view.startIndex
            let bytes = buffer.readSlice(length: length + 1)!.readableBytesView.dropLast()
            if buffer.readerIndex > 4096 { buffer.discardReadBytes() }
            if skipping {
                skipping = false
                continue
            }
            guard length <= maximumLength else { return .tooLong }
            var text = String(decoding: bytes, as: UTF8.self)
            if text.hasSuffix("\r") { text.removeLast() }
            return .line(text)
        }
    }
}
