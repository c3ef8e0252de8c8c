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
    /// The socket came from systemd (socket activation): systemd owns the file.
    public let activated: Bool

    private init(channel: any Channel, path: String, activated: Bool) {
        self.channel = channel
        self.path = path
        self.activated = activated
    }

    /// Binds `path` (replacing a stale socket file), sets its mode and group, and starts
    /// accepting clients on `group`. With `inheritedDescriptor` (socket activation) it uses
    /// that listening socket instead and leaves the file to systemd. Asynchronous, not
    /// `wait()`ing: the caller may itself run on one of `group`'s event loops.
    public static func listen(path: String, mode: UInt32, groupName: String?, inheritedDescriptor: Int32? = nil, context: PublisherContext,
                              on group: any EventLoopGroup) async throws(SocketServerError) -> SocketServer {
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 128)
            .childChannelOption(.writeBufferWaterMark, value: .init(low: 16 * 1024, high: 64 * 1024))
            // Reads of at most 16 KiB: what a client sent ahead of its answers stays small.
            .childChannelOption(.recvAllocator, value: AdaptiveRecvByteBufferAllocator(minimum: 64, initial: 2048, maximum: 16 * 1024))
            .childChannelInitializer { channel in
                // Counted from the accept to the close, refused or not.
                let open = context.clients.opened()
                channel.closeFuture.whenComplete { _ in context.clients.closed() }
                return Self.peerCredentials(of: channel).flatMapThrowing { peer in
                    let sync = channel.pipeline.syncOperations
                    let limits = context.limits
                    let allowed = limits.maximumClients + (context.policy.allowsControlAtOnce(peer) ? limits.reservedForControl : 0)
                    guard open <= allowed else {
                        context.logger.notice("client refused: too many connections", metadata: ["peer": "\(peer)", "open": "\(open - 1)"])
                        return try sync.addHandler(ClientRefusal(
                            message: "the daemon serves \(open - 1) connections, its limit (socket.max_clients \(limits.maximumClients)): try again later"))
                    }
                    try sync.addHandler(ClientHandler(shared: context, peer: peer))
                }
            }
        if let descriptor = inheritedDescriptor {
            do {
                return SocketServer(channel: try await bootstrap.withBoundSocket(descriptor).get(), path: path, activated: true)
            } catch {
                throw SocketServerError(message: "socket from systemd (fd \(descriptor)): cannot listen: \(error)")
            }
        }
        // Bound, listening, with its mode and group, under a private name first; then renamed
        // into place: a client never finds a socket file that refuses it or has the wrong mode.
        let staging = "\((path as NSString).deletingLastPathComponent)/.\((path as NSString).lastPathComponent).\(getpid())"
        let channel: any Channel
        do {
            try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            channel = try await bootstrap.bind(unixDomainSocketPath: staging, cleanupExistingSocketFile: true).get()
        } catch {
            throw SocketServerError(message: "\(path): cannot listen: \(error)")
        }
        guard chmod(staging, mode_t(mode)) == 0 else {
            throw SocketServerError(message: "\(path): chmod \(String(mode, radix: 8)): \(String(cString: strerror(errno)))")
        }
        if let groupName {
            guard let entry = getgrnam(groupName) else { throw SocketServerError(message: "\(path): no group '\(groupName)'") }
            guard chown(staging, uid_t.max, entry.pointee.gr_gid) == 0 else {
                throw SocketServerError(message: "\(path): chown to group \(groupName): \(String(cString: strerror(errno)))")
            }
        }
        guard rename(staging, path) == 0 else {
            throw SocketServerError(message: "\(path): cannot put the socket in place: \(String(cString: strerror(errno)))")
        }
        return SocketServer(channel: channel, path: path, activated: false)
    }

    /// Stops accepting and closes the listening socket (clients' connections close with the group).
    public func close() async {
        try? await channel.close().get()
        if !activated { unlink(path) }
    }

    /// The listening socket systemd passed (`LISTEN_FDS`, `LISTEN_PID`; sd_listen_fds(3)), if any.
    /// The variables are removed so children do not inherit them.
    public static func socketFromSystemd() -> Int32? {
        let environment = ProcessInfo.processInfo.environment
        guard let pid = environment["LISTEN_PID"].flatMap({ Int32($0) }), pid == getpid(),
              let count = environment["LISTEN_FDS"].flatMap({ Int($0) }), count >= 1 else { return nil }
        unsetenv("LISTEN_PID")
        unsetenv("LISTEN_FDS")
        unsetenv("LISTEN_FDNAMES")
        let descriptor: Int32 = 3  // SD_LISTEN_FDS_START
        _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC)
        return descriptor
    }

    static func peerCredentials(of channel: any Channel) -> EventLoopFuture<PeerCredentials> {
        guard let provider = channel as? any SocketOptionProvider else {
            return channel.eventLoop.makeSucceededFuture(PeerCredentials(pid: 0, uid: UInt32.max, gid: UInt32.max))
        }
        let future: EventLoopFuture<UCred> = provider.unsafeGetSocketOption(level: .socket, name: NIOBSDSocket.Option(rawValue: SO_PEERCRED))
        return future.map { PeerCredentials(pid: $0.pid, uid: $0.uid, gid: $0.gid) }
    }
}
