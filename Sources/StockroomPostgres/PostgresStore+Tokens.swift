import Foundation
import Logging
import NIOCore
import PostgresNIO
import StockroomCore
import StockroomStorage
import StockroomWire

extension PostgresStore {
    static let tokenColumns = "id, user_id, role, created_at, revoked_at"

    static func token(_ row: PostgresRow) throws -> TokenInfo {
        let (id, user, roleName, createdAt, revokedAt) = try row.decode((String, String, String, Int64, Int64?).self)
        guard let role = Role(rawValue: roleName) else { throw PostgresStoreError.schema("corrupt token role \(roleName)") }
        return TokenInfo(
            id: TokenID(id), user: UserID(stored: user), role: role, createdAt: Timestamp.date(milliseconds: createdAt),
            revokedAt: revokedAt.map(Timestamp.date(milliseconds:)))
    }

    public func createToken(user: UserID, role: Role) async throws -> IssuedToken {
        do { try TextRule.check(user.rawValue, field: "user") } catch { throw StoreError.domain(error) }
        let (token, secretHash) = TokenSecret.generate(user: user, role: role)
        _ = try await write { write in
            try await write.query(
                """
                INSERT INTO tokens (id, user_id, role, secret_hash, created_at, revoked_at)
                VALUES (\(token.info.id.rawValue), \(user.rawValue), \(role.rawValue), \(ByteBuffer(bytes: Array(secretHash))),
                        \(Timestamp.milliseconds(token.info.createdAt)), NULL)
                """)
        }
        return token
    }

    public func createTokenIfNone(user: UserID, role: Role) async throws -> IssuedToken? {
        let exists = try await read { connection in
            try await !connection.query(
                "SELECT 1 FROM tokens WHERE user_id = \(user.rawValue) AND revoked_at IS NULL LIMIT 1", logger: self.logger
            ).collect().isEmpty
        }
        return exists ? nil : try await createToken(user: user, role: role)
    }

    public func listTokens() async throws -> [TokenInfo] {
        try await read { connection in
            try await connection.query(
                "SELECT \(unescaped: Self.tokenColumns) FROM tokens ORDER BY created_at, id", logger: self.logger
            ).collect().map(Self.token)
        }
    }

    /// Revokes a token; its trigger moves the token generation and notifies every daemon. This
    /// daemon's streams learn it at once (the generation is read back in the same transaction).
    public func revokeToken(id: TokenID) async throws -> Bool {
        let generation: Int64? = try await write { write in
            guard try await !write.query("SELECT 1 FROM tokens WHERE id = \(id.rawValue)").isEmpty else { return nil }
            try await write.query("UPDATE tokens SET revoked_at = \(Timestamp.milliseconds(Date())) WHERE id = \(id.rawValue) AND revoked_at IS NULL")
            return try await Self.tokenGeneration(write.connection, logger: self.logger)
        }
        guard let generation else { return false }
        hub.observeTokenGeneration(generation)
        return true
    }

    public func isLiveToken(id: TokenID) async throws -> Bool {
        try await read { connection in
            try await !connection.query(
                "SELECT 1 FROM tokens WHERE id = \(id.rawValue) AND revoked_at IS NULL", logger: self.logger
            ).collect().isEmpty
        }
    }

    /// The live token with this secret, from memory while the token generation stands still.
    public func authenticate(secret: String) async throws -> TokenInfo? {
        let digest = TokenSecret.digest(secret)
        let generation = hub.tokenGeneration
        if let cached = tokenCache.token(hash: digest, generation: generation) { return cached }
        let hash = digest.data
        let token = try await read { connection in
            try await connection.query(
                "SELECT \(unescaped: Self.tokenColumns) FROM tokens WHERE secret_hash = \(ByteBuffer(bytes: Array(hash))) AND revoked_at IS NULL",
                logger: self.logger
            ).collect().first.map(Self.token)
        }
        if let token { tokenCache.keep(token, hash: digest, generation: generation) }
        return token
    }

    /// True: every revocation notifies the listener (`t <generation>`), and `poll` reads the
    /// generation every `pollInterval` in case a notification was lost.
    public var watchesTokenRevocations: Bool { true }

    public func observeTokenRevocations() async throws {
        let generation = try await read { connection in try await Self.tokenGeneration(connection, logger: self.logger) }
        hub.observeTokenGeneration(generation)
    }

    static func tokenGeneration(_ connection: PostgresConnection, logger: Logger) async throws -> Int64 {
        let rows = try await connection.query("SELECT value FROM meta WHERE key = 'token_generation'", logger: logger).collect()
        guard let text = try rows.first?.decode(String.self), let generation = Int64(text) else {
            throw PostgresStoreError.schema("missing token generation")
        }
        return generation
    }
}
