import Foundation
import GRDB
import StockroomCore
import StockroomStorage

/// A row of `idempotency_records`: the decided response of a request with an Idempotency-Key.
struct IdempotencyRecord: FetchableRecord, PersistableRecord {
    static let databaseTableName = "idempotency_records"

    var user: UserID
    var scope: IdempotencyScope
    var key: String
    /// Method, path and canonical body of the first request.
    var fingerprint: String
    /// The server's stored answer, opaque here.
    var response: Data
    var createdAt: Int64

    enum Columns {
        static let user = Column("user")
        static let scope = Column("scope")
        static let key = Column("key")
        static let fingerprint = Column("fingerprint")
        static let response = Column("response")
        static let createdAt = Column("created_at")

        /// Every column, in the order `init(row:)` and the cached statements take them.
        static let all = [user, scope, key, fingerprint, response, createdAt]
    }

    init(row: Row) throws {
        guard let scope = IdempotencyScope.fromDatabaseValue(row[Columns.scope]) else {
            throw DatabaseError(message: "corrupt idempotency scope")
        }
        user = row[Columns.user]
        self.scope = scope
        key = row[Columns.key]
        fingerprint = row[Columns.fingerprint]
        response = row[Columns.response]
        createdAt = row[Columns.createdAt]
    }

    func encode(to container: inout PersistenceContainer) throws {
        container[Columns.user] = user
        container[Columns.scope] = scope
        container[Columns.key] = key
        container[Columns.fingerprint] = fingerprint
        container[Columns.response] = response
        container[Columns.createdAt] = createdAt
    }

    /// The record of `response` for `key`, created now.
    init(key: IdempotencyKey, fingerprint: String, response: StoredResponse, at: Int64) throws {
        user = key.user
        scope = key.scope
        self.key = key.key
        self.fingerprint = fingerprint
        self.response = Data(response.bytes)
        createdAt = at
    }

    /// The answer to replay.
    var stored: StoredResponse { StoredResponse(bytes: Array(response)) }

    /// The record of `key`, if its first request was decided. A cached statement, not the query
    /// interface (which prepares its statement anew on every call): every write with a key reads it.
    static func find(_ db: Database, key: IdempotencyKey) throws -> IdempotencyRecord? {
        try IdempotencyRecord.fetchOne(db.cachedStatement(sql: findSQL), arguments: [key.user, key.scope, key.key])
    }

    private static let findSQL =
        "SELECT " + Columns.all.map(\.name).joined(separator: ", ") + " FROM idempotency_records WHERE "
        + [Columns.user, Columns.scope, Columns.key].map { "\($0.name) = ?" }.joined(separator: " AND ")

    /// Inserts the record with one cached statement, for the same reason as `find`.
    func insertCached(_ db: Database) throws {
        try db.cachedStatement(sql: Self.insertSQL).execute(arguments: [
            user, scope, key, fingerprint, response, createdAt,
        ])
    }

    private static let insertSQL =
        "INSERT INTO idempotency_records (" + Columns.all.map(\.name).joined(separator: ", ") + ") VALUES ("
        + Columns.all.map { _ in "?" }.joined(separator: ", ") + ")"
}
