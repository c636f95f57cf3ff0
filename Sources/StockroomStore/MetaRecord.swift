import GRDB
#if canImport(GRDBSQLite)
    import GRDBSQLite
#elseif canImport(SQLite3)
    import SQLite3
#endif

/// A row of `meta`: one of the database's few named values.
struct MetaRecord: Codable, FetchableRecord, PersistableRecord {
    static let databaseTableName = "meta"

    /// The names the store uses.
    enum Key: String, Codable, DatabaseValueConvertible {
        /// The database epoch, named in every feed cursor (0001).
        case epoch
        /// Every change with a seq up to this one was trimmed (0003).
        case trimmedThrough = "trimmed_through"
        /// The count of token revocations, bumped by triggers (0004).
        case tokenGeneration = "token_generation"
        /// The form of the change log's values (0006, `ChangeLog.valueFormat`).
        case changeValueFormat = "change_value_format"
        /// What `writeProbe` last wrote.
        case readyProbe = "ready_probe"
    }

    var key: Key
    var value: String

    enum CodingKeys: String, CodingKey {
        case key, value
    }

    enum Columns {
        static let key = Column(CodingKeys.key)
        static let value = Column(CodingKeys.value)
    }

    /// The value named `key`, if the database has one. A cached statement: the token generation is
    /// read on every authenticated request, the trim watermark on every feed read.
    ///
    /// Read in place (`Statement.readFirstRow`): `String.fetchOne` takes GRDB's
    /// generic `DatabaseValueConvertible` path, a `Row` per run.
    static func value(_ db: Database, _ key: Key) throws -> String? {
        try db.cachedStatement(sql: selectValueSQL).readFirstRow(arguments: [key.rawValue]) { SQLiteColumn.optionalString($0, 0) } ?? nil
    }

    private static let selectValueSQL = "SELECT \(CodingKeys.value.rawValue) FROM meta WHERE \(CodingKeys.key.rawValue) = ?"
}
