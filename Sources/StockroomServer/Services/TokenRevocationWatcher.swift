import Logging
import ServiceLifecycle
import StockroomStorage

/// Reads the token generation every `interval` (`auth.revocationCheckMilliseconds`), so that a token revoked
/// by another process (`stockroom token revoke` on the same file) is refused and its streams end:
/// requests themselves read no token (see `AppDatabase.authenticate`).
struct TokenRevocationWatcher: Service {
    let database: any Storage
    let interval: Duration
    let logger: Logger

    func run() async throws {
        // Only ever touched by the one loop below, one round after another.
        nonisolated(unsafe) var failures = FailureStretch("reading the token generation")
        await repeatUntilShutdown(every: interval) {
            do {
                try await database.observeTokenRevocations()
                failures.succeeded(logger: logger)
            } catch {
                failures.failed(error, logger: logger)
            }
        }
    }
}
