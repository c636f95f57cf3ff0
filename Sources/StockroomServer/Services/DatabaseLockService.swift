import ServiceLifecycle
import StockroomStore

/// Holds the SQLite database's lock (shared) while the server runs, so that `stockroom restore`
/// refuses to replace the file under it; lets go once the services stop.
struct DatabaseLockService: Service {
    let lock: DatabaseFileLock

    func run() async throws {
        defer { lock.release() }
        // Returns at the graceful shutdown, or throws at a cancellation: either way the lock goes.
        try? await gracefulShutdown()
    }
}
