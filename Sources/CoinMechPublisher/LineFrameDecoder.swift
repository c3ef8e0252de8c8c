import CoinMechProtocol
import NIOCore

/// One request line, or the news that a line was too long (it is skipped up to its newline).
enum RequestLine: Sendable {
    case line(String)
    case tooLong
}

/// Splits the byte stream into `\n`-terminated lines of at most `maximumLength` bytes.
struct LineFrameDecoder: ByteToMessageDecoder {
    typealias InboundOut = RequestLine

    let maximumLength: Int
    private var skipping = false

    init(maximumLength: Int = ClientProtocol.maximumRequestLength) { self.maximumLength = maximumLength }

    mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        let view = buffer.readableBytesView
        guard let newline = view.firstIndex(of: UInt8(ascii: "\n")) else {
            if buffer.readableBytes > maximumLength {
                // Drop what we have; keep dropping until the line ends.
                if !skipping { context.fireChannelRead(wrapInboundOut(.tooLong)) }
                skipping = true
                buffer.moveReaderIndex(forwardBy: buffer.readableBytes)
            }
            return .needMoreData
        }
        let length = newline - view.startIndex
        let bytes = buffer.readBytes(length: length + 1)!.dropLast()
        if skipping {
            skipping = false
            return .continue
        }
        guard length <= maximumLength else {
            context.fireChannelRead(wrapInboundOut(.tooLong))
            return .continue
        }
        var text = String(decoding: bytes, as: UTF8.self)
        if text.hasSuffix("\r") { text.removeLast() }
        context.fireChannelRead(wrapInboundOut(.line(text)))
        return .continue
    }

    mutating func decodeLast(context: ChannelHandlerContext, buffer: inout ByteBuffer, seenEOF: Bool) throws -> DecodingState {
        while try decode(context: context, buffer: &buffer) == .continue {}
        return .needMoreData
    }
}
