import Hummingbird

/// Hummingbird's request metrics, except for WebSocket upgrades: the middleware lowers its
/// `http_server_active_requests` gauge when the response body has been written, and an upgraded
/// connection's response never writes one, so every WebSocket left the gauge raised for good.
/// WebSockets are counted in `stockroom_feed_subscribers{transport="ws"}` instead.
struct RequestMetricsMiddleware: RouterMiddleware {
    typealias Context = AppRequestContext

    let metrics = MetricsMiddleware<AppRequestContext>()

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        if request.headers[.upgrade] != nil {
            return try await next(request, context)
        }
        return try await metrics.handle(request, context: context, next: next)
    }
}
