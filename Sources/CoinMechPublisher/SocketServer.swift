import CoinMechProtocol
import Foundation
import Logging
import NIOCore
import NIOPosix

#if canImport(Glibc)
import Glibc
#endif

/// Why the socket could not be set up.
public struct SocketServerError: Error, Sendable, CustomStringConvertible {
    public let message: String
    public var description: String { message }
}

/// The Unix-socket server of the client API (docs/PROTOCOL.md).
public final class SocketServer: Sendable {
    private let channel: any Channel
    public let path: String

    /// Binds `path` (replacing a stale socket file), sets its mode and group, and starts
    /// accepting clients on `group`.
    public init(path: String, mode: UInt32, groupName: String?, context: PublisherContext, on group: any EventLoopGroup) throws(SocketServerError) {
        self.path = path
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 128)
            .childChannelOption(.writeBufferWaterMark, value: .init(low: 16 * 1024, high: 64 * 1024))
            .childChannelInitializer { channel in
                Self.peerCredentials(of: channel).flatMapThrowing { peer in
                    let sync = channel.pipeline.syncOperations
                    try sync.addHandler(ByteToMessageHandler(LineFrameDecoder()))
                    try sync.addHandler(ClientHandler(shared: context, peer: peer))
                }
            }
        do {
            try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            channel = try bootstrap.bind(unixDomainSocketPath: path, cleanupExistingSocketFile: true).wait()
        } catch {
            throw SocketServerError(message: "\(path): cannot listen: \(error)")
        }
        guard chmod(path, mode_t(mode)) == 0 else {
            throw SocketServerError(message: "\(path): chmod \(String(mode, radix: 8)): \(String(cString: strerror(errno)))")
        }
        if let groupName {
            guard let entry = getgrnam(groupName) else { throw SocketServerError(message: "\(path): no group '\(groupName)'") }
            guard chown(path, uid_t.max, entry.pointee.gr_gid) == 0 else {
                throw SocketServerError(message: "\(path): chown to group \(groupName): \(String(cString: strerror(errno)))")
            }
        }
    }

    /// Stops accepting and closes the listening socket (clients' connections close with the group).
    public func close() {
        try? channel.close().wait()
        unlink(path)
    }

    static func peerCredentials(of channel: any Channel) -> EventLoopFuture<PeerCredentials> {
        guard let provider = channel as? any SocketOptionProvider else {
            return channel.eventLoop.makeSucceededFuture(PeerCredentials(pid: 0, uid: UInt32.max, gid: UInt32.max))
        }
        let future: EventLoopFuture<UCred> = provider.unsafeGetSocketOption(level: .socket, name: NIOBSDSocket.Option(rawValue: SO_PEERCRED))
        return future.map { PeerCredentials(pid: $0.pid, uid: $0.uid, gid: $0.gid) }
    }
}
