import ServiceLifecycle
import StockroomStorage
import Synchronization

/// `/ready`'s answer: whether a write would succeed now, from a real write probe that runs at
/// most once per `maxAge` however often it is asked (a probe flood cannot become a write flood).
final class Readiness: Sendable {
    private let database: any Storage
    private let maxAge: Duration
    private let last = Mutex<(at: ContinuousClock.Instant, reason: String?)?>(nil)

    init(database: any Storage, maxAge: Duration = .seconds(1)) {
        self.database = database
        self.maxAge = maxAge
    }

    /// Why the server is not ready, or nil when it is.
    func reason() async -> String? {
        if Task.isShuttingDownGracefully { return "the server is shutting down" }
        if let last = last.withLock({ $0 }), ContinuousClock.now - last.at < maxAge { return last.reason }
        let reason = await database.writeProbe()
        last.withLock { $0 = (ContinuousClock.now, reason) }
        return reason
    }
}
