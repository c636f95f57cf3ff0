import Metrics
import NIOCore
import Synchronization

/// Counts the open connections; past the cap a new one is answered `503` with `Retry-After` and closed.
final class ConnectionCounter: Sendable {
    let maximum: Int
    private let open = Atomic<Int>(0)
    private let gauge = Gauge(label: "stockroom_connections_open")
    private let refusals = Counter(label: "stockroom_limit_refusals_total", dimensions: [("limit", "connections")])

    init(maximum: Int) { self.maximum = maximum }

    /// Counts a new connection until it closes; false when it is over the cap.
    func admit(_ channel: any Channel) -> Bool {
        let count = open.wrappingAdd(1, ordering: .relaxed).newValue
        gauge.record(count)
        channel.closeFuture.whenComplete { [self] _ in
            gauge.record(open.wrappingSubtract(1, ordering: .relaxed).newValue)
        }
        guard count <= maximum else {
            refusals.increment()
            return false
        }
        return true
    }
}
