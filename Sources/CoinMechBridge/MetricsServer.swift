import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization

/// `GET /metrics` over HTTP/1.1 (SwiftNIO, one event-loop thread): the last snapshot the bridge
/// made, as it is. Anything else is 404, a method other than GET or HEAD 405. Bound to loopback
/// by default (docs/FLEET.md: `metrics.listen`). A connection that sends nothing for
/// `idleTimeout` (a request's head not finished within it included) is closed, and at most
/// `maxConnections` are open at once: more are closed as soon as they are accepted. A cabinet
/// stands in a public place; whoever reaches the port cannot hold it.
///
/// @unchecked Sendable: `group` and `channel` are set once in `init` and closed once in `stop`;
/// the snapshot is behind a Mutex.
public final class MetricsServer: @unchecked Sendable {
    private let snapshot = Snapshot()
    private let group: MultiThreadedEventLoopGroup
    private let channel: any Channel
    /// The address it listens on (the port the kernel chose, when asked for 0).
    public let address: String

    public init(host: String, port: Int, idleTimeout: Double = 30, maxConnections: Int = 16) throws(BridgeError) {
        group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let snapshot = self.snapshot
        let open = ConnectionCount(limit: maxConnections)
        let idle = TimeAmount.nanoseconds(Int64(idleTimeout * 1e9))
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                guard open.admit() else { return channel.close() }
                channel.closeFuture.whenComplete { _ in open.leave() }
                return channel.eventLoop.makeCompletedFuture {
                    let pipeline = channel.pipeline.syncOperations
                    try pipeline.addHandler(IdleStateHandler(readTimeout: idle))
                    try pipeline.addHandler(IdleCloser())
                    try pipeline.configureHTTPServerPipeline()
                    try pipeline.addHandler(MetricsHandler(snapshot: snapshot))
                }
            }
        do {
            channel = try bootstrap.bind(host: host, port: port).wait()
        } catch {
            try? group.syncShutdownGracefully()
            throw .metrics("cannot listen on \(host):\(port) for /metrics: \(error) (metrics.listen)")
        }
        address = "\(host):\(channel.localAddress?.port ?? port)"
    }

    public func publish(_ text: [UInt8]) { snapshot.text.withLock { $0 = text } }

    /// The text served, replaced whole at each poll.
    final class Snapshot: Sendable {
        let text = Mutex<[UInt8]>(Array("# no poll of the daemon yet\n".utf8))
    }

    public func stop() {
        try? channel.close().wait()
        try? group.syncShutdownGracefully()
    }
}

/// Connections open now, against the limit.
private final class ConnectionCount: Sendable {
    let limit: Int
    private let open = Atomic<Int>(0)
    init(limit: Int) { self.limit = limit }

    func admit() -> Bool {
        guard open.add(1, ordering: .relaxed).newValue <= limit else {
            open.subtract(1, ordering: .relaxed)
            return false
        }
        return true
    }

    func leave() { open.subtract(1, ordering: .relaxed) }
}

/// Closes a connection that read nothing for the idle timeout.
private final class IdleCloser: ChannelInboundHandler, Sendable {
    typealias InboundIn = NIOAny

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is IdleStateHandler.IdleStateEvent {
            context.close(promise: nil)
        } else {
            context.fireUserInboundEventTriggered(event)
        }
    }
}

/// One connection's requests: the snapshot for `/metrics`, a status code for the rest.
private final class MetricsHandler: ChannelInboundHandler, @unchecked Sendable {
    // @unchecked: used on its channel's event loop only; the snapshot is behind a Mutex.
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart
    private let snapshot: MetricsServer.Snapshot
    private var request: HTTPRequestHead?

    init(snapshot: MetricsServer.Snapshot) { self.snapshot = snapshot }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            request = head
        case .body:
            break
        case .end:
            guard let head = request else { return }
            request = nil
            let path = head.uri.split(separator: "?", maxSplits: 1).first.map(String.init) ?? head.uri
            let (status, body, type): (HTTPResponseStatus, [UInt8], String) =
                head.method != .GET && head.method != .HEAD ? (.methodNotAllowed, Array("GET /metrics\n".utf8), "text/plain")
                : path != "/metrics" ? (.notFound, Array("not here: GET /metrics\n".utf8), "text/plain")
                : (.ok, snapshot.text.withLock { $0 }, "text/plain; version=0.0.4; charset=utf-8")
            var headers = HTTPHeaders([("Content-Type", type), ("Content-Length", "\(body.count)")])
            if !head.isKeepAlive { headers.add(name: "Connection", value: "close") }
            context.write(wrapOutboundOut(.head(HTTPResponseHead(version: head.version, status: status, headers: headers))), promise: nil)
            if head.method != .HEAD {
                context.write(wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(bytes: body)))), promise: nil)
            }
            let keepAlive = head.isKeepAlive
            let channel = context.channel
            context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in
                if !keepAlive { channel.close(promise: nil) }
            }
        }
    }
}
