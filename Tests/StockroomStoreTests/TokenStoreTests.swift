import Foundation
import GRDB
import Testing
@testable import StockroomStore

/// Verified tokens are kept in memory, and revocation still takes effect on the very next request.
@Suite struct TokenStoreTests {
    @Test func aTokenRevokedByAnotherConnectionIsRefusedOnItsNextUse() async throws {
        try await withTemporaryFolder { folder in
            let path = folder.appendingPathComponent("stockroom.sqlite").path
            let server = try AppDatabase.open(path: path)
            let token = try await server.createToken(user: "erin", role: .editor)
            let other = try await server.createToken(user: "otto", role: .viewer)
            // Given both tokens verified once, so they sit in the server's cache.
            #expect(try await server.authenticate(secret: token.secret) == token.info)
            #expect(try await server.authenticate(secret: other.secret) == other.info)

            // When another process (here: another connection pool on the same file, as the CLI is) revokes one.
            let cli = try AppDatabase.open(path: path)
            #expect(try await cli.revokeToken(id: token.info.id))

            // Then the server refuses it at once, and the other token still works.
            #expect(try await server.authenticate(secret: token.secret) == nil)
            #expect(try await server.authenticate(secret: other.secret) == other.info)
        }
    }

    @Test func aTokenRemovedFromTheTableIsRefusedOnItsNextUse() async throws {
        try await withTemporaryDatabase { database in
            let token = try await database.createToken(user: "erin", role: .admin)
            #expect(try await database.authenticate(secret: token.secret) == token.info)
            try await database.writer.write { db in try db.execute(sql: "DELETE FROM tokens") }
            #expect(try await database.authenticate(secret: token.secret) == nil)
        }
    }

    @Test func anUnknownSecretIsRefusedAndAFreshTokenIsAcceptedAtOnce() async throws {
        try await withTemporaryDatabase { database in
            #expect(try await database.authenticate(secret: "sr_unknown") == nil)
            let token = try await database.createToken(user: "erin", role: .viewer)
            #expect(try await database.authenticate(secret: token.secret) == token.info)
        }
    }
}
