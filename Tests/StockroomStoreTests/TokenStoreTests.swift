import Foundation
import GRDB
import Synchronization
import StockroomCore
import StockroomStorage
import Testing
@testable import StockroomStore

/// Verified tokens are kept in memory: a request with a known token reads nothing, and revocation
/// still takes effect on the very next request (by another process: once the server has read the
/// token generation, which `stockroom token revoke` waits for).
@Suite struct TokenStoreTests {
    @Test func aTokenRevokedByAnotherConnectionIsRefusedOnceTheServerReadsTheGeneration() async throws {
        try await withTemporaryFolder { folder in
            let path = folder.appendingPathComponent("stockroom.sqlite").path
            let server = try AppDatabase.open(path: path)
            let token = try await server.createToken(user: "erin", role: .editor)
            let other = try await server.createToken(user: "otto", role: .viewer)
            // Given both tokens verified once, so they sit in the server's cache.
            #expect(try await server.authenticate(secret: token.secret) == token.info)
            #expect(try await server.authenticate(secret: other.secret) == other.info)

            // When another process (here: another connection pool on the same file, as the CLI is) revokes one,
            // and the server's `TokenRevocationWatcher` takes its next look.
            let cli = try AppDatabase.open(path: path)
            #expect(try await cli.revokeToken(id: token.info.id))
            try await server.observeTokenRevocations()

            // Then the server refuses it, and the other token still works.
            #expect(try await server.authenticate(secret: token.secret) == nil)
            #expect(try await server.authenticate(secret: other.secret) == other.info)
        }
    }

    /// The writer reads the token generation on a commit only when it may have moved; a revocation
    /// another connection committed in between is such a case, and that commit's wake carries it.
    /// `tickBetween`: the server first records a presence tick (a sighting only: a commit that
    /// appends no entry and touches no token), which must not hide the revocation from the write.
    @Test(arguments: [false, true])
    func aCommitAfterAnotherConnectionRevokedReadsTheNewGeneration(tickBetween: Bool) async throws {
        try await withTemporaryFolder { folder in
            let path = folder.appendingPathComponent("stockroom.sqlite").path
            let server = try AppDatabase.open(path: path)
            let token = try await server.createToken(user: "erin", role: .editor)
            _ = try await server.createItem(id: nil, draft: Sample.keyboard, origin: Sample.erin)
            _ = try await server.createItem(id: nil, draft: Sample.mouse, origin: Sample.erin)
            let before = server.hub.tokenGeneration
            #expect(try await server.authenticate(secret: token.secret) == token.info)

            // When another connection revokes the token and the server then commits a write of its
            // own (no `observeTokenRevocations` in between),
            let cli = try AppDatabase.open(path: path)
            #expect(try await cli.revokeToken(id: token.info.id))
            if tickBetween { #expect(try await server.recordPresence(Self.sighting("tablet")) == false) }
            _ = try await server.createItem(id: nil, draft: Sample.keyboard, origin: Sample.erin)

            // then that commit published the new generation, and the token is refused.
            #expect(server.hub.tokenGeneration > before)
            #expect(try await server.authenticate(secret: token.secret) == nil)
        }
    }

    /// With no other connection's commit, a presence tick keeps the generation the writer knows:
    /// the write after it does not read it again.
    @Test func aWriteAfterAPresenceTickDoesNotReadTheGenerationAgain() async throws {
        try await withTemporaryFolder { folder in
            let (database, statements) = try Self.tracedDatabase(in: folder)
            _ = try await database.createItem(id: nil, draft: Sample.keyboard, origin: Sample.erin)
            _ = try await database.createItem(id: nil, draft: Sample.mouse, origin: Sample.erin)
            let generationRead = "SELECT value FROM meta WHERE key = ?"
            let start = statements.count(startingWith: generationRead)

            #expect(try await database.recordPresence(Self.sighting("tablet")) == false)
            _ = try await database.createItem(id: nil, draft: Sample.keyboard, origin: Sample.erin)

            #expect(statements.count(startingWith: generationRead) == start)
        }
    }

    private static func sighting(_ clientID: ClientID) -> PresenceTick {
        let now = Date()
        return PresenceTick(daemon: "a", now: now, leaseUntil: now.addingTimeInterval(30), seen: [.init(clientID, "erin"): now])
    }

    /// A store in `folder` whose connections record every statement they run.
    private static func tracedDatabase(in folder: URL) throws -> (AppDatabase, Statements) {
        let path = folder.appendingPathComponent("stockroom.sqlite").path
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let statements = Statements()
        var configuration = Configuration()
        configuration.prepareDatabase { db in db.trace { statements.record("\($0)") } }
        let pool = try DatabasePool(path: path, configuration: configuration)
        return (try AppDatabase(pool, requestReaders: RequestReaders([pool])), statements)
    }

    @Test func aCachedTokenIsVerifiedWithoutReadingTheDatabase() async throws {
        try await withTemporaryFolder { folder in
            let (database, statements) = try Self.tracedDatabase(in: folder)
            let token = try await database.createToken(user: "erin", role: .editor)
            let start = statements.count
            #expect(try await database.authenticate(secret: token.secret) == token.info)
            let verified = statements.count
            #expect(verified > start, "the first verification reads the token")
            for _ in 0..<10 { #expect(try await database.authenticate(secret: token.secret) == token.info) }
            #expect(statements.count == verified, "later ones read nothing")
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

/// SQL statements seen by a trace, from any connection's queue.
private final class Statements: Sendable {
    private let seen = Mutex<[String]>([])
    func record(_ sql: String) { seen.withLock { $0.append(sql) } }
    var count: Int { seen.withLock { $0.count } }
    func count(startingWith prefix: String) -> Int { seen.withLock { $0.count { $0.hasPrefix(prefix) } } }
}

