import CoinMechFleet
import CoinMechSupport
import Foundation
import Hummingbird
import Logging

/// `/login` and `/logout`. A login is throttled per name and per source before anything is
/// looked up (`LoginGate`); the session cookie is HttpOnly, SameSite=Lax, and Secure when the
/// browser came over TLS (a proxy this fleet trusts says so).
struct LoginController {
    let sessions: OperatorSessions
    let store: FleetStore
    let gate: LoginGate
    let trustedProxies: Set<String>
    let logger: Logger

    func addRoutes(to router: some RouterMethods<FleetRequestContext>) {
        router.get("/login") { request, _ -> Response in
            FleetWeb.html(FleetPages.login(error: nil, next: FleetWeb.localPath(request.uri.queryParameters.get("next")) ?? "/"))
        }
        router.post("/login", use: login)
        router.post("/logout") { request, context -> Response in
            sessions.close(context.signedIn?.token ?? request.cookies[FleetWeb.cookie]?.value)
            var response = Response.redirect(to: "/login")
            let origin = ClientOrigin(request: request, peer: context.remoteAddress, trustedProxies: trustedProxies)
            response.setCookie(Cookie(name: FleetWeb.cookie, value: "", maxAge: 0, path: "/", secure: origin.secure, httpOnly: true, sameSite: .lax))
            return response
        }
    }

    @Sendable func login(_ request: Request, context: FleetRequestContext) async throws -> Response {
        struct Form: Decodable { var name: String; var password: String; var next: String? }
        guard let form = try? await URLEncodedFormDecoder().decode(Form.self, from: request, context: context), form.name.count <= 64, form.password.count <= 1024 else {
            return FleetWeb.html(FleetPages.login(error: "Give a name and a password.", next: "/"), status: .badRequest)
        }
        let next = FleetWeb.localPath(form.next) ?? "/"
        let origin = ClientOrigin(request: request, peer: context.remoteAddress, trustedProxies: trustedProxies)
        var role: String?
        let verdict = try await gate.login(name: form.name, password: form.password, source: origin.address, now: Date().timeIntervalSince1970) {
            let found = try await store.operatorLogin(name: form.name)
            role = found?.role
            return found?.hash
        }
        switch verdict {
        case .allowed:
            let token = sessions.open(name: form.name, now: Date().timeIntervalSince1970)
            var response = Response.redirect(to: next)
            response.setCookie(Cookie(name: FleetWeb.cookie, value: token, maxAge: Int(OperatorSessions.lifetime), path: "/", secure: origin.secure, httpOnly: true, sameSite: .lax))
            logger.info("dashboard: \(LogText.quoted(form.name, limit: 64)) logged in (\(role ?? "?")) from \(LogText.quoted(origin.address, limit: 64))")
            return response
        case .refused:
            logger.warning("dashboard: a failed login as \(LogText.quoted(form.name, limit: 64)) from \(LogText.quoted(origin.address, limit: 64))")
            return FleetWeb.html(FleetPages.login(error: "That name and password do not match an operator.", next: next), status: .unauthorized)
        case .throttled(let wait):
            var response = FleetWeb.html(FleetPages.login(error: "Too many failed logins: try again in \(Int(wait.rounded(.up))) s.", next: next), status: .tooManyRequests)
            response.headers[.retryAfter] = "\(Int(wait.rounded(.up)))"
            return response
        case .busy:
            var response = FleetWeb.html(FleetPages.login(error: "Too many logins at once: try again in a moment.", next: next), status: .serviceUnavailable)
            response.headers[.retryAfter] = "2"
            return response
        }
    }
}
