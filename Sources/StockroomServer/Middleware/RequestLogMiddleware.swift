import Foundation
import Hummingbird
import Logging
import NIOCore
import StockroomStore

/// Logs method, path (never the query, which may hold an access token), status and duration of each
/// request; and, being the outermost middleware, counts the requests in flight for the store (which
/// at synchronous=NORMAL applies a write on its event loop only for a request handled alone).
struct RequestLogMiddleware: RouterMiddleware {
    typealias Context = AppRequestContext

    let requests: RequestsInFlight

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let start = ContinuousClock.now
        requests.enter()
        defer { requests.leave() }
        let response = try await next(request, context)
        let elapsed = ContinuousClock.now - start
        context.logger.info(
            "request",
            metadata: [
                "http.method": .string(request.method.rawValue),
                "http.path": .string(request.uri.path),
                "http.status": .string(String(response.status.code)),
                "duration_ms": .string(Self.milliseconds(elapsed)),
            ]
        )
        return response
    }

    /// `elapsed` in milliseconds with two decimals (`0.42`), without `String(format:)`'s cost per request.
    static func milliseconds(_ elapsed: Duration) -> String {
        let hundredths = elapsed.components.seconds * 100_000 + elapsed.components.attoseconds / 10_000_000_000_000
        let fraction = hundredths % 100
        return "\(hundredths / 100).\(fraction < 10 ? "0" : "")\(fraction)"
    }
}
