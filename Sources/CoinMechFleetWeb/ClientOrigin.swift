import Hummingbird
import NIOCore

/// Who sent a request, as far as the dashboard can tell: the peer's address, or, when the peer
/// is a proxy this fleet trusts (`http.trusted_proxies`, loopback by default: the TLS proxy the
/// dashboard is put behind), the address and scheme the proxy says it had (`X-Forwarded-For`,
/// `X-Forwarded-Proto`). Anyone else's forwarding headers are ignored.
struct ClientOrigin: Sendable, Equatable {
    /// The client's address: what the login throttle counts failures by.
    var address: String
    /// The browser reached the dashboard over TLS: cookies are `Secure`.
    var secure: Bool

    init(request: Request, peer: SocketAddress?, trustedProxies: Set<String>) {
        let peerAddress = peer?.ipAddress ?? "unknown"
        guard trustedProxies.contains(peerAddress) else {
            self.init(address: peerAddress, secure: false)
            return
        }
        // The last hop the proxy added is the one it saw; anything before it the client wrote.
        let forwarded = request.headers[values: .init("X-Forwarded-For")!].last?.split(separator: ",").last
            .map { $0.trimmingCharacters(in: .whitespaces) }.flatMap { $0.isEmpty || $0.count > 64 ? nil : $0 }
        let proto = request.headers[.init("X-Forwarded-Proto")!]?.split(separator: ",").last?.trimmingCharacters(in: .whitespaces).lowercased()
        self.init(address: forwarded ?? peerAddress, secure: proto == "https")
    }

    init(address: String, secure: Bool) {
        self.address = address
        self.secure = secure
    }
}
