import CoinMechFleet
import Foundation
import Hummingbird
import Logging

/// The dashboard (docs/FLEET.md, "The dashboard"): server-rendered pages over the fleet's
/// database, no JavaScript, laid out as Hummingbird's own: a request context, middleware that
/// reads the session once (`SessionMiddleware`) and guards the pages (`RequireOperator`), and
/// a controller per part. Operators log in with a password (bcrypt hashes in `operators`),
/// throttled per name and per source; the session is a random token in an HttpOnly,
/// SameSite=Lax cookie (Secure over TLS), so a form posted from another site carries no session.
public enum FleetWeb {
    static let cookie = "coinmech_fleet_session"

    public struct Settings: Sendable {
        /// Peers whose `X-Forwarded-For` and `X-Forwarded-Proto` are believed.
        public var trustedProxies: Set<String>
        public init(trustedProxies: Set<String>) { self.trustedProxies = trustedProxies }
    }

    public static func router(store: FleetStore, sessions: OperatorSessions, outbox: CommandOutbox, figures: FleetFigures, instance: String,
                              settings: Settings, logger: Logger) -> Router<FleetRequestContext> {
        let router = Router(context: FleetRequestContext.self)
        router.add(middleware: SecurityHeadersMiddleware())
        // A form posted from another origin is refused, whatever its cookie.
        router.add(middleware: SameOriginMiddleware())
        router.add(middleware: SessionMiddleware(sessions: sessions, store: store))
        LoginController(sessions: sessions, store: store, gate: LoginGate(), trustedProxies: settings.trustedProxies, logger: logger).addRoutes(to: router)
        MetricsController(store: store, figures: figures, instance: instance).addRoutes(to: router)
        let pages = router.group().add(middleware: RequireOperator())
        FleetPageController(store: store).addRoutes(to: pages)
        CabinetController(store: store, outbox: outbox, logger: logger).addRoutes(to: pages)
        AlertController(store: store, logger: logger).addRoutes(to: pages)
        return router
    }

    static func now() -> Double { Date().timeIntervalSince1970 }
    /// The start of today (UTC).
    static func dayStart() -> Double { floor(now() / 86400) * 86400 }

    static func html(_ text: String, status: HTTPResponse.Status = .ok) -> Response {
        Response(status: status, headers: [.contentType: "text/html; charset=utf-8", .cacheControl: "no-store"], body: .init(byteBuffer: ByteBuffer(string: text)))
    }

    /// A path of this site, or nil: it starts with one `/`, and holds no backslash, space or
    /// control character (`/\\evil.example` and `/\t/evil.example` are other hosts to a browser).
    static func localPath(_ text: String?) -> String? {
        guard let text, text.hasPrefix("/"), !text.hasPrefix("//"),
              !text.unicodeScalars.contains(where: { $0 == "\\" || $0.properties.generalCategory == .control || $0.properties.isWhitespace }) else { return nil }
        return text
    }

    /// `12.35`, `12`, `0.5` as minor units (2 decimals); nil for anything else.
    static func minorUnits(_ text: String) -> Int64? {
        let parts = text.trimmingCharacters(in: .whitespaces).split(separator: ".", omittingEmptySubsequences: false)
        guard (1...2).contains(parts.count), let whole = Int64(parts[0]), whole >= 0, whole < 1_000_000_000 else { return nil }
        guard parts.count == 2 else { return whole * 100 }
        let fraction = parts[1]
        guard (1...2).contains(fraction.count), fraction.allSatisfy(\.isNumber), let cents = Int64(fraction.count == 1 ? fraction + "0" : fraction) else { return nil }
        return whole * 100 + cents
    }

    static func isCurrency(_ text: String) -> Bool { DEXAudit.isCurrencyCode(text) }
}

extension FleetRequestContext {
    /// The operator `SessionMiddleware` found; the routes behind `RequireOperator` always have one.
    func requireOperator() throws -> Operator {
        guard let found = self.signedIn else { throw HTTPError(.unauthorized) }
        return found
    }
}
