import StockroomWire
import Foundation
import GRDB
import StockroomCore
import StockroomStorage

extension AppDatabase {
    /// Creates a token for `user` with `role`; the secret is returned once and stored only as a hash.
    public func createToken(user: UserID, role: Role) async throws -> IssuedToken {
        // Checked here too, so that no caller (`UserID(stored:)` included) can store a user that
        // SQLite would cut at a NUL.
        do { try TextRule.check(user.rawValue, field: "user") } catch { throw StoreError.domain(error) }
        let (token, secretHash) = TokenSecret.generate(user: user, role: role)
        try await write { db in try TokenRecord(info: token.info, secretHash: secretHash).insert(db) }
        return token
    }

    /// Creates a token for `user` unless one that is not revoked exists; nil when one does.
    public func createTokenIfNone(user: UserID, role: Role) async throws -> IssuedToken? {
        let exists = try await read { db in
            try !TokenRecord.filter(TokenRecord.Columns.user == user && TokenRecord.Columns.revokedAt == nil).isEmpty(db)
        }
        return exists ? nil : try await createToken(user: user, role: role)
    }

    /// Every token, oldest first, revoked ones included.
    public func listTokens() async throws -> [TokenInfo] {
        try await read { db in
            try TokenRecord.order(TokenRecord.Columns.createdAt, TokenRecord.Columns.id).fetchAll(db).map(\.info)
        }
    }

    /// Revokes a token; false when there is no such token.
    /// The token is refused and its open streams in this process end from the commit on: the
    /// writer's `ChangeObserver` hands the new token generation to the hub, which wakes the streams,
    /// and each re-checks its token (`isLiveToken`) before delivering anything more.
    public func revokeToken(id: TokenID) async throws -> Bool {
        try await write { db in
            guard try TokenRecord.exists(db, key: id) else { return false }
            try TokenRecord
                .filter(key: id)
                .filter(TokenRecord.Columns.revokedAt == nil)
                .updateAll(db, TokenRecord.Columns.revokedAt.set(to: Timestamp.milliseconds(Date())))
            return true
        }
    }

    /// Whether the token `id` exists and is not revoked: what an open stream asks when the token
    /// generation moved, and at each heartbeat (for revocations by another process).
    public func isLiveToken(id: TokenID) async throws -> Bool {
        try readNow { db in
            // A cached statement, not the query interface (which prepares its statement anew on every
            // call): every open stream asks at each heartbeat.
            try Int.fetchOne(db.cachedStatement(sql: Self.liveTokenSQL), arguments: [id]) != nil
        }
    }

    /// The live token whose secret is `secret`, or nil. Verified tokens are kept in memory under
    /// the token generation (the count of revocations and removals) the hub holds, so a request
    /// with a known token reads nothing. A revocation by this process moves the hub's generation
    /// when it commits, before it answers; one by another process (`stockroom token revoke`) when
    /// `observeTokenRevocations` next runs (the server's `TokenRevocationWatcher`, every
    /// `auth.revocationCheckMilliseconds`; `stockroom token revoke` waits ten of those).
    /// The generation is taken before the token is read: a revocation committed in between leaves
    /// the token unread (refused) or cached under the older generation, which the next lookup retires.
    public func authenticate(secret: String) async throws -> TokenInfo? {
        let digest = TokenSecret.digest(secret)
        let generation = hub.tokenGeneration
        if let cached = tokenCache.token(hash: digest, generation: generation) { return cached }
        let hash = digest.data
        return try readNow { db in
            // A cached statement, not the query interface (which prepares its statement anew on every
            // call): every request with a token not yet cached reads it.
            let token = try TokenRecord.fetchOne(db.cachedStatement(sql: Self.tokenBySecretSQL), arguments: [hash])?.info
            if let token { tokenCache.keep(token, hash: digest, generation: generation) }
            return token
        }
    }

    /// Reads the token generation and hands it to the hub: if another process revoked or removed a
    /// token since the last read, cached tokens are verified anew and open streams re-check theirs.
    /// False: another process's revocation leaves no trace here until `observeTokenRevocations` reads it.
    public var watchesTokenRevocations: Bool { false }

    public func observeTokenRevocations() async throws {
        let generation = try readNow { db in try Self.tokenGeneration(db) }
        hub.observeTokenGeneration(generation)
    }

    /// The count of token revocations so far (see `Migrations/sql/0004_token_generation.sql`).
    static func tokenGeneration(_ db: Database) throws -> Int64 {
        // A cached statement (see `MetaRecord.value`): servers read it every `auth.revocationCheckMilliseconds`.
        guard let value = try MetaRecord.value(db, .tokenGeneration), let generation = Int64(value) else {
            throw DatabaseError(message: "missing token generation")
        }
        return generation
    }

    private static let liveTokenSQL =
        "SELECT 1 FROM tokens WHERE \(TokenRecord.Columns.id.name) = ? AND \(TokenRecord.Columns.revokedAt.name) IS NULL"
    private static let tokenBySecretSQL =
        TokenRecord.selectSQL + " WHERE \(TokenRecord.Columns.secretHash.name) = ? AND \(TokenRecord.Columns.revokedAt.name) IS NULL"
}
