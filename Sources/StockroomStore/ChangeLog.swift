import Foundation
import GRDB
import StockroomCore

/// Appends change entries inside the write's own transaction.
enum ChangeLog {
    /// Appends one entry and returns its seq.
    @discardableResult
    static func append(
        _ db: Database,
        entity: ChangeEntity,
        op: ChangeOp,
        id: String,
        owner: UserID?,
        value: (some Encodable)?,
        origin: Origin,
        at: Int64
    ) throws -> Int64 {
        let json = try value.map { value in
            if let writable = value as? any JSONWritable {
                var writer = JSONWriter()
                writable.write(to: &writer)
                return writer.string
            }
            return String(decoding: try JSONCoding.encoder().encode(value), as: UTF8.self)
        }
        // A cached statement: every write appends at least one entry.
        try db.cachedStatement(
            sql: """
                INSERT INTO changes (entity, op, entity_id, owner, value, origin_client_id, origin_idempotency_key, at)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                """
        ).execute(arguments: [entity.rawValue, op.rawValue, id, owner?.rawValue, json, origin.clientID?.rawValue, origin.idempotencyKey, at])
        return db.lastInsertedRowID
    }

    /// The seq of the newest entry ever appended (0 before the first).
    static func head(_ db: Database) throws -> Int64 {
        try Int64.fetchOne(db, sql: "SELECT seq FROM sqlite_sequence WHERE name = 'changes'") ?? 0
    }
}
