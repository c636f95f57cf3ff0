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

    func addRoutes(to router: Router<AppRequestContext>) {
        router.get("health") { _, _ in Reply.json(writing: StatusBody.ok).response }
        router.get("ready") { [readiness] _, _ in
            if let reason = await readiness.reason() {
                var error = APIError(.unavailable, "not ready: \(reason)")
                error.headers[.retryAfter] = "1"
                throw error
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
            router.get("metrics") { _, _ in try await metrics() }
        case .admin:
            // Behind the same authenticator and caller context as `/v1`, for admins only.
            router.group("metrics")
                .add(middleware: BearerTokenAuthenticator(database: database))
                .group(context: CallerContext.self)
                .add(middleware: RequireRole(role: .admin, action: "read metrics (metrics.access = admin)"))
                .get { _, _ in try await metrics() }
        }
        router.get("openapi.yaml") { _, _ in
            Response(
                status: .ok, headers: [.contentType: "application/yaml; charset=utf-8"],
                body: .init(byteBuffer: ByteBuffer(bytes: try OpenAPIDocument.bytes())))
        }
    }
}
