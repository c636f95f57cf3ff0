import ServiceLifecycle
import StockroomStore

/// Holds the SQLite database's lock (shared) while the server runs, so that `stockroom restore`
/// refuses to replace the file under it, and its serving lock, so that no second server opens it;
/// lets go once the services stop.
struct DatabaseLockService: Service {
    let lock: DatabaseFileLock
    var serving: DatabaseFileLock? = nil

    func run() async throws {
        defer {
            lock.release()
            serving?.release()
        }
        // Returns at the graceful shutdown, or throws at a cancellation: either way the lock goes.
        try? await gracefulShutdown()
    }
}
