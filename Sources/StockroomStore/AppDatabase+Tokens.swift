import Crypto
import Foundation
import GRDB
import StockroomCore

/// A bearer token as listed: never its secret.
public struct TokenInfo: Sendable, Hashable, Codable {
    /// The token's public identifier.
    public var id: TokenID
    /// The user the token acts for.
    public var user: UserID
    /// What the token may do.
    public var role: Role
    /// When it was created.
    public var createdAt: Date
    /// When it was revoked, if it was.
    @ExplicitNull public var revokedAt: Date?

    /// Creates token information.
    public init(id: TokenID, user: UserID, role: Role, createdAt: Date, revokedAt: Date?) {
        self.id = id
        self.user = user
        self.role = role
        self.createdAt = createdAt
        self.revokedAt = revokedAt
    }
}

/// A freshly created token, with the secret shown this once.
public struct NewToken: Sendable, Hashable {
    /// The token's information.
    public var info: TokenInfo
    /// The bearer secret.
    public var secret: String
}

extension AppDatabase {
    /// Creates a token for `user` with `role`; the secret is returned once and stored only as a hash.
    public func createToken(user: UserID, role: Role) async throws -> NewToken {
        // Checked here too, so that no caller (`UserID(stored:)` included) can store a user that
        // SQLite would cut at a NUL.
        do { try TextRule.check(user.rawValue, field: "user") } catch { throw StoreError.domain(error) }
        let secret = "sr_" + Self.randomBase64URL(bytes: 32)
        let info = TokenInfo(
            id: TokenID("tok_" + Self.randomBase64URL(bytes: 9)), user: user, role: role, createdAt: Timestamp.now(), revokedAt: nil)
        try await write { db in
            try db.execute(
                sql: "INSERT INTO tokens (id, user, role, secret_hash, created_at) VALUES (?, ?, ?, ?, ?)",
                arguments: [info.id, info.user.rawValue, info.role.rawValue, Self.hash(secret), Timestamp.milliseconds(info.createdAt)]
            )
        }
        return NewToken(info: info, secret: secret)
    }

    /// Creates a token for `user` unless one that is not revoked exists; nil when one does.
    public func createTokenIfNone(user: UserID, role: Role) async throws -> NewToken? {
        let exists = try await read { db in
            try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM tokens WHERE user = ? AND revoked_at IS NULL)", arguments: [user.rawValue]) ?? false
        }
        return exists ? nil : try await createToken(user: user, role: role)
    }

    /// Every token, oldest first, revoked ones included.
    public func listTokens() async throws -> [TokenInfo] {
        try await read { db in
            try Row.fetchAll(db, sql: "SELECT id, user, role, created_at, revoked_at FROM tokens ORDER BY created_at, id")
                .map(Self.tokenInfo)
        }
    }

    /// Revokes a token; false when there is no such token.
    /// The token's open streams in this process end at once: the new token generation wakes them
    /// and each re-checks its token (`isLiveToken`) before delivering anything more.
    public func revokeToken(id: TokenID) async throws -> Bool {
        let generation: Int64? = try await write { db in
            guard try Int.fetchOne(db, sql: "SELECT 1 FROM tokens WHERE id = ?", arguments: [id]) != nil else { return nil }
            try db.execute(
                sql: "UPDATE tokens SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL",
                arguments: [Timestamp.milliseconds(Date()), id])
            return try Self.tokenGeneration(db)
        }
        guard let generation else { return false }
        hub.observeTokenGeneration(generation)
        return true
    }

    /// Whether the token `id` exists and is not revoked: what an open stream asks when the token
    /// generation moved, and at each heartbeat (for revocations by another process).
    public func isLiveToken(id: TokenID) throws -> Bool {
        try readNow { db in
            try Int.fetchOne(db.cachedStatement(sql: "SELECT 1 FROM tokens WHERE id = ? AND revoked_at IS NULL"), arguments: [id]) != nil
        }
    }

    /// The live token whose secret is `secret`, or nil. Verified tokens are kept in memory; the
    /// one read per call is the token generation (a single cached statement on the calling thread),
    /// which every revocation bumps, so a token revoked by any process is refused on its next use.
    /// The generation is read before the token: a revocation committed in between leaves the
    /// token unread (refused) or cached under the older generation, which the next read retires.
    public func authenticate(secret: String) async throws -> TokenInfo? {
        let hash = Self.hash(secret)
        return try readNow { db in
            let generation = try Self.tokenGeneration(db)
            if let cached = tokenCache.token(hash: hash, generation: generation) { return cached }
            let token = try Row.fetchOne(
                db.cachedStatement(
                    sql: "SELECT id, user, role, created_at, revoked_at FROM tokens WHERE secret_hash = ? AND revoked_at IS NULL"),
                arguments: [hash]
            ).map(Self.tokenInfo)
            if let token { tokenCache.keep(token, hash: hash, generation: generation) }
            return token
        }
    }

    /// The count of token revocations so far (see `Migrations/sql/0004_token_generation.sql`).
    static func tokenGeneration(_ db: Database) throws -> Int64 {
        // A cached statement: this runs on every authenticated request.
        let value = try String.fetchOne(db.cachedStatement(sql: "SELECT value FROM meta WHERE key = 'token_generation'"))
        guard let value, let generation = Int64(value) else { throw DatabaseError(message: "missing token generation") }
        return generation
    }

    static func tokenInfo(_ row: Row) throws -> TokenInfo {
        guard let role = Role(rawValue: row["role"]) else { throw DatabaseError(message: "corrupt token role") }
        let revokedAt: Int64? = row["revoked_at"]
        return TokenInfo(
            id: row["id"], user: UserID(stored: row["user"]), role: role,
            createdAt: Timestamp.date(milliseconds: row["created_at"]),
            revokedAt: revokedAt.map(Timestamp.date(milliseconds:))
        )
    }

    static func hash(_ secret: String) -> Data {
        Data(SHA256.hash(data: Data(secret.utf8)))
    }

    static func randomBase64URL(bytes count: Int) -> String {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<count).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
        return Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
}
