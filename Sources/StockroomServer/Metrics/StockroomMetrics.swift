import Metrics
import Prometheus

/// The process-wide Prometheus registry behind swift-metrics; bootstrapped once, on first use.
enum StockroomMetrics {
    static let registry: PrometheusCollectorRegistry = {
        let registry = PrometheusCollectorRegistry()
        MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: registry))
        return registry
    }()

    /// Makes sure swift-metrics reports into `registry` before the first metric is created.
    static func bootstrap() { _ = registry }
}
