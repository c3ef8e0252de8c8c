import CoinMechFleet
import Foundation
import Hummingbird

/// The one place a session is read: the cookie's token to an operator name (`OperatorSessions`),
/// and that operator's role read from the database for this request, so a demoted admin is an
/// operator at the next click and a removed operator is logged out.
struct SessionMiddleware: RouterMiddleware {
    typealias Context = FleetRequestContext
    let sessions: OperatorSessions
    let store: FleetStore

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var context = context
        let token = request.cookies[FleetWeb.cookie]?.value
        if let token, let session = sessions.session(token, now: Date().timeIntervalSince1970) {
            if let role = try await store.operatorRole(name: session.name) {
                context.signedIn = .init(name: session.name, admin: role == "admin", token: token)
            } else {
                sessions.close(token)
            }
        }
        return try await next(request, context)
    }
}

/// Routes behind it need a logged-in operator: anyone else is sent to the login form, with the
/// page to come back to.
struct RequireOperator: RouterMiddleware {
    typealias Context = FleetRequestContext

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard context.signedIn != nil else {
            let path = request.uri.path.hasPrefix("/") ? request.uri.path : "/"
            return .redirect(to: "/login?next=\(path.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "/")")
        }
        return try await next(request, context)
    }
}
