import Foundation
import StockroomPostgres
import StockroomStorage
import StockroomStore
import TestSupport

/// A storage implementation the contract runs against: each test gets a fresh, empty store.
/// SQLite runs everywhere; PostgreSQL where it is installed (or required: `TestPostgres.isAvailable`).
struct StorageBackend: Sendable, CustomStringConvertible {
    let description: String
    /// A fresh store with `limits` (its files, if any, in `folder`, removed after the test), and how
    /// to close it.
    let open: @Sendable (_ folder: URL, _ limits: StoreLimits) async throws -> (storage: any Storage, close: @Sendable () async -> Void)

    static let sqlite = StorageBackend(description: "SQLite") { folder, limits in
        var database = try AppDatabase.open(path: folder.appendingPathComponent("stockroom.sqlite").path)
        database.limits = limits
        return (database, {})
    }

    /// A new database on the test process's PostgreSQL, its pool running until the test ends, with
    /// the tests' long deadline (`TestPostgres.storeDeadline`).
    static let postgres = StorageBackend(description: "PostgreSQL") { _, limits in
        let store = try await PostgresStore.open(
            url: PostgresURL(try await TestPostgres.shared().newDatabase()), limits: limits, deadline: TestPostgres.storeDeadline)
        let running = Task { try await store.run() }
        return (store, {
            running.cancel()
            _ = await running.result
        })
    }

    static let all: [StorageBackend] = TestPostgres.isAvailable ? [.sqlite, .postgres] : [.sqlite]
}

/// Runs `body` with a fresh store of `backend` (with `limits`), in a temporary folder removed afterwards.
func withStorage<T>(
    _ backend: StorageBackend, limits: StoreLimits = StoreLimits(), _ body: (any Storage) async throws -> T
) async throws -> T {
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("stockroom-contract-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: folder) }
    let (storage, close) = try await backend.open(folder, limits)
    do {
        let value = try await body(storage)
        await close()
        return value
    } catch {
        await close()
        throw error
    }
}
