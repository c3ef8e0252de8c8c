import Hummingbird
import NIOCore

/// A dashboard request's context: where it came from, and (set by `SessionMiddleware`) who is
/// logged in, with the role read for this request.
public struct FleetRequestContext: RequestContext, RemoteAddressRequestContext {
    public var coreContext: CoreRequestContextStorage
    /// The peer of the connection (a TLS proxy in front, or the browser).
    public let remoteAddress: SocketAddress?
    public var signedIn: Operator?

    public struct Operator: Sendable, Equatable {
        public var name: String
        public var admin: Bool
        /// The session's token, to close it.
        public var token: String
    }

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        remoteAddress = source.channel.remoteAddress
        signedIn = nil
    }

    /// A form's size at most: the dashboard's forms are a few fields.
    public var maxUploadSize: Int { 16 << 10 }
}
