import CoinMechFleet
import Foundation
import Hummingbird
import HummingbirdBcrypt
import Logging
import NIOPosix
import Synchronization

/// The dashboard (docs/FLEET.md, "The dashboard"): server-rendered pages over the fleet's
/// database, no JavaScript. Operators log in with a password (bcrypt hashes in `operators`);
/// the session is a random token in an HttpOnly, SameSite=Lax cookie, so a form posted from
/// another site carries no session. Only an admin may send a cabinet a command. `/metrics`
/// answers without a login, for Prometheus on the same host (bind `http.listen` to loopback, or
/// put it behind the proxy that terminates TLS).
public enum FleetWeb {
    static let cookie = "coinmech_fleet_session"

    public static func router(store: FleetStore, sessions: OperatorSessions, outbox: CommandOutbox, figures: FleetFigures, instance: String,
                              logger: Logger) -> Router<BasicRequestContext> {
        let router = Router(context: BasicRequestContext.self)
        /// Password checks running now (each a quarter of a second of one core).
        let verifying = Atomic<Int>(0)
        // A form posted from another origin is refused, whatever its cookie.
        router.add(middleware: SameOriginMiddleware())
        @Sendable func now() -> Double { Date().timeIntervalSince1970 }
        /// The start of today (UTC).
        @Sendable func dayStart() -> Double { floor(now() / 86400) * 86400 }

        @Sendable func html(_ text: String, status: HTTPResponse.Status = .ok) -> Response {
            Response(status: status, headers: [.contentType: "text/html; charset=utf-8", .cacheControl: "no-store"], body: .init(byteBuffer: ByteBuffer(string: text)))
        }
        @Sendable func session(_ request: Request) -> OperatorSessions.Session? {
            sessions.session(request.cookies[cookie]?.value, now: now())
        }
        @Sendable func toLogin(_ request: Request) -> Response {
            let next = request.uri.path.hasPrefix("/") ? request.uri.path : "/"
            return .redirect(to: "/login?next=\(next.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "/")")
        }

        router.get("/login") { request, _ -> Response in
            html(FleetPages.login(error: nil, next: request.uri.queryParameters.get("next") ?? "/"))
        }
        router.post("/login") { request, context -> Response in
            struct Form: Decodable { var name: String; var password: String; var next: String? }
            guard let form = try? await URLEncodedFormDecoder().decode(Form.self, from: request, context: context) else {
                return html(FleetPages.login(error: "Give a name and a password.", next: "/"), status: .badRequest)
            }
            let next = Self.localPath(form.next) ?? "/"
            let found = try await store.operatorLogin(name: form.name)
            // bcrypt's cost is the point: verified on NIO's pool for blocking work, never on an
            // event loop or the tasks' pool the ingest runs on, and two at a time at most.
            guard verifying.add(1, ordering: .relaxed).newValue <= 2 else {
                verifying.subtract(1, ordering: .relaxed)
                return html(FleetPages.login(error: "Too many logins at once: try again in a moment.", next: next), status: .serviceUnavailable)
            }
            let password = form.password
            let valid: Bool
            do {
                valid = try await NIOThreadPool.singleton.runIfActive {
                    guard let found else {
                        _ = Bcrypt.verify(password, hash: dummyHash)
                        return false
                    }
                    return Bcrypt.verify(password, hash: found.hash)
                }
            } catch {
                verifying.subtract(1, ordering: .relaxed)
                throw error
            }
            verifying.subtract(1, ordering: .relaxed)
            guard let found, valid else {
                logger.warning("dashboard: a failed login as '\(form.name)'")
                return html(FleetPages.login(error: "That name and password do not match an operator.", next: next), status: .unauthorized)
            }
            let token = sessions.open(name: form.name, admin: found.role == "admin", now: now())
            var response = Response.redirect(to: next)
            response.setCookie(Cookie(name: cookie, value: token, maxAge: Int(OperatorSessions.lifetime), path: "/", httpOnly: true, sameSite: .lax))
            logger.info("dashboard: \(form.name) logged in (\(found.role))")
            return response
        }
        router.post("/logout") { request, _ -> Response in
            sessions.close(request.cookies[cookie]?.value)
            var response = Response.redirect(to: "/login")
            response.setCookie(Cookie(name: cookie, value: "", maxAge: 0, path: "/", httpOnly: true, sameSite: .lax))
            return response
        }
        router.get("/") { request, _ -> Response in
            guard let who = session(request) else { return toLogin(request) }
            return html(FleetPages.fleet(try await store.fleetPage(now: now(), dayStart: dayStart()), user: who.name, admin: who.admin))
        }
        router.get("/cabinet/:id") { request, context -> Response in
            guard let who = session(request) else { return toLogin(request) }
            let id = try context.parameters.require("id")
            guard let page = try await store.cabinetPage(id, now: now(), dayStart: dayStart()) else { return html(FleetPages.notFound("cabinet \(id)"), status: .notFound) }
            return html(FleetPages.cabinet(page, user: who.name, admin: who.admin, message: request.uri.queryParameters.get("message")))
        }
        router.post("/cabinet/:id/collections") { request, context -> Response in
            guard let who = session(request) else { return toLogin(request) }
            let id = try context.parameters.require("id")
            struct Form: Decodable { var amount: String; var currency: String }
            guard let form = try? await URLEncodedFormDecoder().decode(Form.self, from: request, context: context),
                  let minor = Self.minorUnits(form.amount), Self.isCurrency(form.currency.uppercased()) else {
                return html(FleetPages.error("A collection needs an amount such as 12.35 and a currency such as USD."), status: .badRequest)
            }
            guard try await store.site(of: id) != nil else { return html(FleetPages.notFound("cabinet \(id)"), status: .notFound) }
            let made = try await store.recordCollection(cabinet: id, by: who.name, currency: form.currency.uppercased(), countedMinor: minor, now: now())
            logger.info("dashboard: \(who.name) recorded a collection of \(id): counted \(minor), ledger \(made.ledger.minor), difference \(made.difference)")
            return .redirect(to: "/cabinet/\(id)?message=collection+recorded")
        }
        router.post("/alerts/:id/ack") { request, context -> Response in
            guard let who = session(request) else { return toLogin(request) }
            guard let id = Int64(try context.parameters.require("id")) else { return html(FleetPages.notFound("alert"), status: .notFound) }
            guard try await store.acknowledgeAlert(id: id, by: who.name, now: now()) else { return html(FleetPages.notFound("open alert \(id)"), status: .notFound) }
            logger.info("dashboard: \(who.name) acknowledged alert \(id)")
            return .redirect(to: Self.localPath(request.headers[.referer].flatMap { URL(string: $0)?.path }) ?? "/")
        }
        router.post("/cabinet/:id/commands") { request, context -> Response in
            guard let who = session(request) else { return toLogin(request) }
            guard who.admin else { return html(FleetPages.error("Only an admin may send a cabinet a command."), status: .forbidden) }
            let id = try context.parameters.require("id")
            struct Form: Decodable { var name: String }
            let commands = ["inhibit_on": ("inhibit", "{\"on\":true}"), "inhibit_off": ("inhibit", "{\"on\":false}"), "status": ("status", "{}"), "totals": ("totals", "{}")]
            guard let form = try? await URLEncodedFormDecoder().decode(Form.self, from: request, context: context), let (name, args) = commands[form.name] else {
                return html(FleetPages.error("Unknown command: choose one of \(commands.keys.sorted().joined(separator: ", "))."), status: .badRequest)
            }
            guard let site = try await store.site(of: id) else { return html(FleetPages.notFound("cabinet \(id)"), status: .notFound) }
            let commandID = "web-\(UUID().uuidString.lowercased())"
            try await store.recordCommand(id: commandID, cabinet: id, name: name, args: args, by: who.name, now: now())
            outbox.send(.init(id: commandID, cabinet: id, site: site, name: name, args: args, by: who.name))
            return .redirect(to: "/cabinet/\(id)?message=\(name)+sent")
        }
        router.get("/metrics") { _, _ -> Response in
            let text = try await FleetMetrics.text(store: store, figures: figures.snapshot, instance: instance, now: now())
            return Response(status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"], body: .init(byteBuffer: ByteBuffer(string: text)))
        }
        return router
    }

    /// A hash to verify against when the name is unknown, at the cost of every real one (12), so
    /// that a wrong name costs the same time as a wrong password.
    static let dummyHash = Bcrypt.hash("coinmech-fleet: no such operator", cost: 12)

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

    static func isCurrency(_ text: String) -> Bool { text.count == 3 && text.allSatisfy { $0.isASCII && $0.isUppercase } }
}
