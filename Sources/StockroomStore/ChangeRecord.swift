import Foundation
import GRDB
#if canImport(GRDBSQLite)
    import GRDBSQLite
#elseif canImport(SQLite3)
    import SQLite3
#endif
import StockroomCore
import StockroomStorage

/// A row of `changes`: one entry of the change log.
struct ChangeRecord: Codable, FetchableRecord, PersistableRecord {
    static let databaseTableName = "changes"

    var seq: Int64?
    var entity: ChangeEntity
    var op: ChangeOp
    var entityID: String
    /// The user a navigation change is visible to; nil for items.
    var owner: UserID?
    /// The JSON of the Item or Navigation after the change; nil for a delete.
    var value: String?
    var originClientID: ClientID?
    var originIdempotencyKey: String?
    var at: Int64
    /// For an item change, the JSON of the item before it: `ItemBefore.stored`.
    var previous: String?

    enum CodingKeys: String, CodingKey, CaseIterable {
        case seq, entity, op
        case entityID = "entity_id"
        case owner, value
        case originClientID = "origin_client_id"
        case originIdempotencyKey = "origin_idempotency_key"
        case at, previous
    }

    enum Columns {
        static let seq = Column(CodingKeys.seq)
        static let entity = Column(CodingKeys.entity)
        static let op = Column(CodingKeys.op)
        static let entityID = Column(CodingKeys.entityID)
        static let owner = Column(CodingKeys.owner)
        static let value = Column(CodingKeys.value)
        static let originClientID = Column(CodingKeys.originClientID)
        static let originIdempotencyKey = Column(CodingKeys.originIdempotencyKey)
        static let at = Column(CodingKeys.at)
        static let previous = Column(CodingKeys.previous)
    }

    /// Every column, in the order `init(row:)` reads them by position.
    static var databaseSelection: [any SQLSelectable] { CodingKeys.allCases.map { Column($0) } }
    /// The same selection as SQL, for the cached statements of the feed.
    static let selectSQL = "SELECT " + CodingKeys.allCases.map(\.rawValue).joined(separator: ", ") + " FROM changes"

    /// Reads a row of `databaseSelection` by position: this runs for every entry a feed reads from the log.
    init(row: Row) throws {
        guard let entity = ChangeEntity(rawValue: row[1]), let op = ChangeOp(rawValue: row[2]) else {
            throw DatabaseError(message: "corrupt change entry")
        }
        seq = row[0]
        self.entity = entity
        self.op = op
        entityID = row[3]
        owner = row[4]
        value = row[5]
        originClientID = row[6]
        originIdempotencyKey = row[7]
        at = row[8]
        previous = row[9]
    }
}

extension ChangeRecord {
    /// Reads the current row of a statement of `selectSQL` in place, through SQLite's C API, as
    /// `ItemRecord(current:)` does: the group committer reads each commit's new entries with it.
    init(current row: SQLiteStatement) throws {
        guard let entity = ChangeEntity(rawValue: try SQLiteColumn.string(row, 1)),
            let op = ChangeOp(rawValue: try SQLiteColumn.string(row, 2))
        else {
            throw DatabaseError(message: "corrupt change entry")
        }
        seq = sqlite3_column_int64(row, 0)
        self.entity = entity
        self.op = op
        entityID = try SQLiteColumn.string(row, 3)
        owner = SQLiteColumn.optionalString(row, 4).flatMap(UserID.init(storedText:))
        value = SQLiteColumn.optionalString(row, 5)
        originClientID = SQLiteColumn.optionalString(row, 6).flatMap(ClientID.init(storedText:))
        originIdempotencyKey = SQLiteColumn.optionalString(row, 7)
        at = sqlite3_column_int64(row, 8)
        previous = SQLiteColumn.optionalString(row, 9)
    }

}

/// Entities and operations are stored as their names (the table's CHECKs hold them to those).
extension ChangeEntity: DatabaseValueConvertible {}
extension ChangeOp: DatabaseValueConvertible {}

extension ChangeEntry {
    /// The entry of a row of `changes`, its JSON encoded for `epoch`.
    init(_ record: ChangeRecord, epoch: String) {
        self.init(
            seq: record.seq ?? 0, entity: record.entity, op: record.op, id: record.entityID, owner: record.owner,
            valueJSON: record.value, before: ItemBefore(stored: record.previous), originClientID: record.originClientID,
            originIdempotencyKey: record.originIdempotencyKey, at: record.at, epoch: epoch)
    }
}
