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

    /// Only tightened: a file the operator made read-only stays so (as any other user than root,
    /// the start then fails saying SQLite cannot write it), and the `-wal` and `-shm` files follow
    /// the database file's mode, as SQLite gives new ones.
    @Test func theOwnersPermissionsAreLeftAsTheyAre() async throws {
        try await withTemporaryFolder { folder in
            let path = folder.appendingPathComponent("stockroom.sqlite").path
            let url = URL(fileURLWithPath: path)
            try AppDatabase.prepareFiles(at: url)
            try FileManager.default.setAttributes([.posixPermissions: 0o444], ofItemAtPath: path)
            try AppDatabase.prepareFiles(at: url)
            #expect(try Self.mode(path) == 0o400)
            #expect(FileManager.default.createFile(atPath: path + "-wal", contents: nil, attributes: [.posixPermissions: 0o644]))
            #expect(FileManager.default.createFile(atPath: path + "-shm", contents: nil, attributes: [.posixPermissions: 0o400]))
            try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: path)
            try AppDatabase.prepareFiles(at: url)
            for file in [path, path + "-wal", path + "-shm"] {
                #expect(try Self.mode(file) == 0o600, "\(file)")
            }
        }
    }
}
