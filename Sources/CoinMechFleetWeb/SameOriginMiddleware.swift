import Hummingbird

/// A POST whose `Origin` names another host than the one it was sent to is refused (403): the
/// `SameSite=Lax` cookie keeps other sites' forms out, and this keeps out a sibling subdomain's.
/// A request without `Origin` (curl, an old browser) passes: it carries no ambient session of a
/// browser on another page. `/login` is left to the password: it acts on no session, and a
/// login page an operator keeps elsewhere (or the browser test's) may post to it.
struct SameOriginMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        if request.method == .post, request.uri.path != "/login", let origin = request.headers[.origin], let host = request.head.authority {
            let named = origin.split(separator: "/", omittingEmptySubsequences: true).dropFirst().first.map(String.init)
            guard named == host else {
                return Response(status: .forbidden, headers: [.contentType: "text/plain; charset=utf-8"],
                                body: .init(byteBuffer: ByteBuffer(string: "refused: a form from \(origin), not from \(host)\n")))
            }
        }
        return try await next(request, context)
    }
}
