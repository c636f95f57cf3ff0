import StockroomStorage
import Synchronization

/// The idempotency keys whose first request is still running in this process.
final class InFlightKeys: Sendable {
    private let keys = Mutex<Set<IdempotencyKey>>([])

    /// Claims `key`; throws `requestInProgress` when another request holds it.
    func claim(_ key: IdempotencyKey) throws {
        let claimed = keys.withLock { $0.insert(key).inserted }
        guard claimed else { throw StoreError.requestInProgress }
    }

    /// Releases a claimed key.
    func release(_ key: IdempotencyKey) {
        _ = keys.withLock { $0.remove(key) }
    }
}
