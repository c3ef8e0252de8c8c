import CoinMechProtocol
import NIOCore

/// A connection past the limit: one error line that says why, then closed.
final class ClientRefusal: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    let message: String

    init(message: String) { self.message = message }

    func channelActive(context: ChannelHandlerContext) {
        var buffer = context.channel.allocator.buffer(capacity: 256)
        buffer.writeString(ClientProtocol.error(id: nil, .unavailable, message).description)
        buffer.writeInteger(UInt8(ascii: "\n"))
        let channel = context.channel
        context.writeAndFlush(wrapOutboundOut(buffer)).whenComplete { _ in channel.close(promise: nil) }
    }

    /// What it sends is not read.
    func channelRead(context: ChannelHandlerContext, data: NIOAny) {}
}
