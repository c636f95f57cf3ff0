import Foundation
import Logging
import ServiceLifecycle
import StockroomPostgres
import StockroomStorage
import StockroomStore

/// The storage the settings name, opened: read by the server at startup and by the CLI's commands.
public enum StorageOpening {
    /// Opens the configured storage: the PostgreSQL database when `databaseURL` is set (migrated
    /// once whatever other daemons do; its pool, listener and poll are `services`, which must run
    /// before it is used), else the SQLite file (created and migrated if needed; with `serving`, for
    /// the server, refused while another server has it open).
    public static func open(
        _ settings: Settings, logger: Logger, writesInFlight: WritesInFlight = WritesInFlight(), serving: Bool = false
    ) async throws -> (storage: any Storage, services: [any Service]) {
        if let databaseURL = settings.databaseURL {
            do {
                let store = try await PostgresStore.open(
                    url: databaseURL, limits: StoreLimits(clientsPerUser: settings.limits.clientsPerUser),
                    maximumConnections: settings.databaseMaxConnections, logger: logger)
                return (store, [store])
            } catch {
                throw StartupError.postgres(url: "\(databaseURL)", underlying: error)
            }
        }
        do {
            let (database, lock, servingLock) = try openSQLite(settings, logger: logger, writesInFlight: writesInFlight, serving: serving)
            return (database, [DatabaseLockService(lock: lock, serving: servingLock)])
        } catch {
            throw StartupError.database(path: settings.databasePath, underlying: error)
        }
    }

    /// Opens the configured database, creating and migrating it if needed, with its lock taken
    /// shared first (`DatabaseFileLock`: `restore` refuses while it is held, and this throws
    /// `DatabaseFileLock.Held` while a restore runs). The caller holds the lock for as long as
    /// it uses the database. `writesInFlight` is the server's count of its write requests, which
    /// the store reads as a hint. With `serving`, for a server, it also takes the serving lock
    /// (`DatabaseFileLock(serving:)`): a server's caches (items, tokens) hold what its own writes
    /// did, and another server on the file would write behind them.
    public static func openSQLite(
        _ settings: Settings, logger: Logger, writesInFlight: WritesInFlight = WritesInFlight(), serving: Bool = false
    ) throws -> (database: AppDatabase, lock: DatabaseFileLock, servingLock: DatabaseFileLock?) {
        try AppDatabase.checkDatabasePath(settings.databasePath)
        try AppDatabase.createFolder(forDatabase: settings.databasePath)
        let servingLock = serving ? try DatabaseFileLock(serving: settings.databasePath) : nil
        let lock = try DatabaseFileLock(database: settings.databasePath, mode: .shared)
        var database = try AppDatabase.open(
            path: settings.databasePath, synchronous: settings.synchronous, busyTimeout: .seconds(settings.busyTimeoutSeconds),
            writesInFlight: writesInFlight, logger: logger)
        database.limits = StoreLimits(clientsPerUser: settings.limits.clientsPerUser)
        return (database, lock, servingLock)
    }
}
