import Metrics
import Synchronization

/// A count of things in progress, as a gauge.
final class CountGauge: Sendable {
    private let count = Mutex(0)
    private let gauge: Gauge

    init(label: String, dimensions: [(String, String)] = []) {
        gauge = Gauge(label: label, dimensions: dimensions)
    }

    func add(_ delta: Int) {
        gauge.record(count.withLock { count in
            count += delta
            return count
        })
    }
}
