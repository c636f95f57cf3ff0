import HTTPTypes
import Hummingbird

/// CORS for the configured origins only, by Hummingbird's `CORSMiddleware`.
///
/// Hummingbird's middleware answers every preflight with the allowed methods and headers, also
/// for an origin it does not allow; the contract gives any other origin no CORS headers at all.
/// So a request from an allowed origin goes through `CORSMiddleware` (which echoes the origin,
/// answers the preflight with 204 and adds `Vary: Origin`), and any other request passes by it.
/// `CORSMiddleware` puts `Access-Control-Expose-Headers` on the preflight only, where browsers
/// ignore it; they read it from the actual answer, so it is added there.
/// It sits outside `ErrorMiddleware`, so errors and streams get the headers too.
struct AllowedOriginsCORSMiddleware: RouterMiddleware {
    typealias Context = AppRequestContext

    let origins: Set<String>
    let cors = CORSMiddleware<AppRequestContext>(
        allowOrigin: .originBased,
        allowHeaders: Self.allowedHeaders,
        allowMethods: [.get, .post, .put, .delete],
        exposedHeaders: Self.exposedHeaders
    )

    static let allowedHeaders: [HTTPField.Name] = [
        .authorization, .contentType, .ifMatch, HTTPField.Name("Idempotency-Key")!, FeedController.lastEventID,
    ]
    static let exposedHeaders = ["ETag", "Idempotency-Replayed", "Retry-After", "Location"]

    init(origins: [String]) {
        self.origins = Set(origins)
    }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard let origin = request.headers.value(of: .origin), origins.contains(origin) else {
            return try await next(request, context)
        }
        var response = try await cors.handle(request, context: context, next: next)
        if request.method != .options {
            response.headers[.accessControlExposeHeaders] = Self.exposedHeaders.joined(separator: ", ")
        }
        return response
    }
}
