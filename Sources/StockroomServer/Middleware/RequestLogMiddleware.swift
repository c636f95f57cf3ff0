import Foundation
import Hummingbird
import Logging
import NIOCore

/// Logs method, path (never the query, which may hold an access token), status and duration of each request.
struct RequestLogMiddleware: RouterMiddleware {
    typealias Context = AppRequestContext

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let start = ContinuousClock.now
        let response = try await next(request, context)
        let elapsed = ContinuousClock.now - start
        let ms = Double(elapsed.components.seconds) * 1000 + Double(elapsed.components.attoseconds) / 1e15
        context.logger.info(
            "request",
            metadata: [
                "http.method": "\(request.method.rawValue)",
                "http.path": "\(request.uri.path)",
                "http.status": "\(response.status.code)",
                "duration_ms": "\(String(format: "%.2f", ms))",
            ]
        )
        return response
    }
}
