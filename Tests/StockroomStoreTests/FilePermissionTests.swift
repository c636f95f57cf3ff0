import Foundation
import Testing

@testable import StockroomStore

/// Drafts and token hashes stay the owner's (issue #14, point 7), whatever the umask.
@Suite("Database file permissions")
struct FilePermissionTests {
    static func mode(_ path: String) throws -> Int {
        try #require(FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int) & 0o777
    }

    @Test func aNewDataDirectoryIs0700AndItsFiles0600() async throws {
        try await withTemporaryFolder { folder in
            let path = folder.appendingPathComponent("data/stockroom.sqlite").path
            let database = try AppDatabase.open(path: path)
            _ = try await database.createToken(user: "erin", role: .editor)
            #expect(try Self.mode(folder.appendingPathComponent("data").path) == 0o700)
            for file in [path, path + "-wal", path + "-shm"] {
                #expect(try Self.mode(file) == 0o600, "\(file)")
            }
        }
    }

    @Test func anExistingWorldReadableDatabaseIsTightened() async throws {
        try await withTemporaryFolder { folder in
            let path = folder.appendingPathComponent("stockroom.sqlite").path
            _ = try AppDatabase.open(path: path)
            try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: path)
            _ = try AppDatabase.open(path: path)
            #expect(try Self.mode(path) == 0o600)
        }
    }
}
