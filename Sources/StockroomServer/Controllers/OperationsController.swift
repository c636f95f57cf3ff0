import Prometheus
import Foundation
import Hummingbird
import Metrics
import StockroomStorage
import StockroomWire

/// `/health`, `/ready`, `/metrics` and `/openapi.yaml`: open without a token.
struct OperationsController {
    let database: any Storage
    /// Who may read `/metrics`.
    var metricsAccess: MetricsAccess = .public
    let readiness: Readiness

    init(database: any Storage, metricsAccess: MetricsAccess = .public) {
        self.database = database
        self.metricsAccess = metricsAccess
        self.readiness = Readiness(database: database)
    }

    /// Each route answers `HEAD` as it answers `GET` (an uptime check or a load balancer may ask
    /// either): the same status and headers, `Content-Length` included, without the body
    /// (`ErrorMiddleware` leaves it out).
    func addRoutes(to router: Router<AppRequestContext>) {
        router.getAndHead("health") { _, _ in Reply.json(writing: StatusBody.ok).response }
        router.getAndHead("ready") { [readiness] _, _ in
            if let reason = await readiness.reason() {
                throw APIError(.unavailable, "not ready: \(reason)")
            }
            return Reply.json(writing: StatusBody.ok).response
        }
        let metrics: @Sendable () async throws -> Response = { [database] in
            if let statistics = try? await database.logStatistics() {
                Gauge(label: "stockroom_change_log_entries").record(statistics.entries)
                Gauge(label: "stockroom_change_log_oldest_seq").record(statistics.oldestSeq ?? 0)
            }
            var buffer: [UInt8] = []
            StockroomMetrics.registry.emit(into: &buffer)
            return Response(
                status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                body: .init(byteBuffer: ByteBuffer(bytes: buffer)))
        }
        switch metricsAccess {
        case .public:
            router.getAndHead("metrics") { _, _ in try await metrics() }
        case .admin:
            // Behind the same authenticator and caller context as `/v1`, for admins only.
            let admins = router.group("metrics")
                .add(middleware: BearerTokenAuthenticator(database: database))
                .group(context: CallerContext.self)
                .add(middleware: RequireRole(role: .admin, action: "read metrics (metrics.access = admin)"))
            admins.get { _, _ in try await metrics() }
            admins.head { _, _ in try await metrics() }
        }
        router.getAndHead("openapi.yaml") { _, _ in
            Response(
                status: .ok, headers: [.contentType: "application/yaml; charset=utf-8"],
                body: .init(byteBuffer: ByteBuffer(bytes: try OpenAPIDocument.bytes())))
        }
    }
}

extension Router<AppRequestContext> {
    /// `handler` for `GET` and for `HEAD` on `path`. Not for a stream: the answer to `HEAD` drops the
    /// body unread, so what a stream's body would release (its lease) would be kept.
    func getAndHead(
        _ path: RouterPath, use handler: @escaping @Sendable (Request, AppRequestContext) async throws -> some ResponseGenerator
    ) {
        get(path, use: handler)
        head(path, use: handler)
    }
}
