import Foundation
import Hummingbird
import Logging
import NIOCore
import StockroomStorage

/// Logs method, path (never the query, which may hold an access token), status and duration of each
/// request; and, being the outermost middleware, counts the write requests in flight, the hint the
/// store reads (at synchronous=NORMAL it applies a write on its event loop only when the write is
/// alone). Reads, and feed requests waiting for changes, are not writes and are not counted.
struct RequestLogMiddleware: RouterMiddleware {
    typealias Context = AppRequestContext

    let writes: WritesInFlight

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let start = ContinuousClock.now
        let writes = Self.writes(request.method) ? self.writes : nil
        writes?.enter()
        defer { writes?.leave() }
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

    /// Whether a request of `method` may write (the others only read).
    static func writes(_ method: HTTPRequest.Method) -> Bool {
        method != .get && method != .head && method != .options
    }

    /// `elapsed` in milliseconds with two decimals (`0.42`), without `String(format:)`'s cost per request.
    static func milliseconds(_ elapsed: Duration) -> String {
        let hundredths = elapsed.components.seconds * 100_000 + elapsed.components.attoseconds / 10_000_000_000_000
        let fraction = hundredths % 100
        return "\(hundredths / 100).\(fraction < 10 ? "0" : "")\(fraction)"
    }
}
