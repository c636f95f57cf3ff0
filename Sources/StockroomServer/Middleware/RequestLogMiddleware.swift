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
    /// Where the request lines go, found once from the process's log handler (the request loggers
    /// are made by the same factory); nil: logged through swift-log.
    let lines: RequestLines?

    init(writes: WritesInFlight, lines: RequestLines? = (Logger(label: "stockroom").handler as? any RequestLogHandler)?.requestLines) {
        self.writes = writes
        self.lines = lines
    }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let start = ContinuousClock.now
        let writes = Self.writes(request.method) ? self.writes : nil
        writes?.enter()
        defer { writes?.leave() }
        let response = try await next(request, context)
        log(request, context: context, status: response.status, elapsed: ContinuousClock.now - start)
        return response
    }

    /// The request's line. Synchronous and out of line, so that its locals live on the thread's
    /// stack while it runs, not in `handle`'s async frame, which every request allocates.
    @inline(never)
    private func log(_ request: Request, context: Context, status: HTTPResponse.Status, elapsed: Duration) {
        guard context.logger.logLevel <= .info else { return }
        if let lines {
            // Formatted by the log's writer thread, off the event loop.
            let handler = context.logger.handler
            lines.record(
                method: request.method, path: request.uri.path, status: Int(status.code), elapsed: elapsed,
                metadata: handler.metadata, metadataProvider: handler.metadataProvider)
        } else {
            context.logger.info(
                "request",
                metadata: [
                    "http.method": .string(request.method.rawValue),
                    "http.path": .string(request.uri.path),
                    "http.status": .string(String(status.code)),
                    "duration_ms": .string(RequestLine.milliseconds(elapsed)),
                ]
            )
        }
    }

    /// Whether a request of `method` may write (the others only read).
    static func writes(_ method: HTTPRequest.Method) -> Bool {
        method != .get && method != .head && method != .options
    }
}
