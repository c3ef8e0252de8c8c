import Hummingbird

/// Headers on every answer: no page of the dashboard inside another site's frame (a form's
/// button under a decoy, clickjacking), no type guessing, no address of a page sent to another
/// site, nothing kept in caches.
struct SecurityHeadersMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var response = try await next(request, context)
        response.headers[.contentSecurityPolicy] = "frame-ancestors 'none'; form-action 'self'; base-uri 'none'; object-src 'none'"
        response.headers[.init("X-Frame-Options")!] = "DENY"
        response.headers[.init("X-Content-Type-Options")!] = "nosniff"
        response.headers[.init("Referrer-Policy")!] = "same-origin"
        if response.headers[.cacheControl] == nil { response.headers[.cacheControl] = "no-store" }
        return response
    }
}
