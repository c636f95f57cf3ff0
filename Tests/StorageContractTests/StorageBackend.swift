import Foundation
import StockroomStorage
import StockroomStore

/// A storage implementation the contract runs against: each test gets a fresh, empty store.
/// SQLite runs everywhere; another backend joins `all` when it can run here.
struct StorageBackend: Sendable, CustomStringConvertible {
    let description: String
    /// A fresh store in `folder` (removed after the test).
    let make: @Sendable (_ folder: URL) async throws -> any Storage

    static let sqlite = StorageBackend(description: "SQLite") { folder in
        try AppDatabase.open(path: folder.appendingPathComponent("stockroom.sqlite").path)
    }

    static let all: [StorageBackend] = [.sqlite]
}

/// Runs `body` with a fresh store of `backend`, in a temporary folder removed afterwards.
func withStorage<T>(_ backend: StorageBackend, _ body: (any Storage) async throws -> T) async throws -> T {
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("stockroom-contract-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: folder) }
    return try await body(try await backend.make(folder))
}
