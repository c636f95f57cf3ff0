import HTTPTypes
import Hummingbird

/// CORS for the configured origins only, by Hummingbird's `CORSMiddleware`.
///
/// Hummingbird's middleware answers every preflight with the allowed methods and headers, also
/// for an origin it does not allow; the contract gives any other origin no CORS headers at all.
/// So a request from an allowed origin goes through `CORSMiddleware` (which echoes the origin,
/// answers the preflight with 204 and adds `Vary: Origin`), and any other request passes by it.
/// `CORSMiddleware` puts `Access-Control-Expose-Headers` on the preflight only, where browsers
/// ignore it; they read it from the actual answer, so it is added there. A preflight's answer may
/// be kept for `preflightMaxAge` (browsers cap it: Chromium at two hours), so that a page's
/// requests with a token are not each preceded by an `OPTIONS`.
/// Every other answer carries `Vary: Origin` too, without CORS headers: whether an answer has
/// them depends on the `Origin`, so a cache must not hand one origin's answer (or the answer to a
/// request without `Origin`) to another.
/// It sits outside `ErrorMiddleware`, so errors and streams get the headers too.
struct AllowedOriginsCORSMiddleware: RouterMiddleware {
    typealias Context = AppRequestContext

    let origins: Set<String>
    let cors = CORSMiddleware<AppRequestContext>(
        allowOrigin: .originBased,
        allowHeaders: Self.allowedHeaders,
        allowMethods: [.get, .post, .put, .delete],
        exposedHeaders: Self.exposedHeaders,
        maxAge: .seconds(Self.preflightMaxAge)
    )

    /// How long, in seconds, a browser may keep a preflight's answer: two hours, Chromium's cap.
    static let preflightMaxAge: Int64 = 7200

    static let allowedHeaders: [HTTPField.Name] = [
        .authorization, .contentType, .ifMatch, HTTPField.Name("Idempotency-Key")!, FeedController.lastEventID,
    ]
    /// The contract's four, and the answer headers of Stockroom's own that a page reads: an
    /// export's cursor, an import's counts and cursor, and a stream's head.
    static let exposedHeaders = [
        "ETag", "Idempotency-Replayed", "Retry-After", "Location", "Stockroom-Cursor", "Stockroom-Import", "Stockroom-Head",
    ]

    init(origins: [String]) {
        self.origins = Set(origins)
    }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard let origin = request.headers.value(of: .origin), origins.contains(origin) else {
            var response = try await next(request, context)
            response.headers[values: .vary].append("Origin")
            return response
        }
        var response = try await cors.handle(request, context: context, next: next)
        if request.method != .options {
            response.headers[.accessControlExposeHeaders] = Self.exposedHeaders.joined(separator: ", ")
        }
        return response
    }
}
