import GRDB

#if canImport(GRDBSQLite)
    import GRDBSQLite
#elseif canImport(SQLite3)
    import SQLite3
#endif

/// Text columns of a statement's current row read in place, for the streams that encode thousands
/// of rows per request: no `Row`, no `String` per value. A buffer is valid until the statement steps.
enum SQLiteColumn {
    /// A text column that the schema declares NOT NULL.
    static func text(_ row: SQLiteStatement, _ column: Int32) throws -> UnsafeBufferPointer<UInt8> {
        guard let text = optionalText(row, column) else { throw DatabaseError(message: "corrupt row: column \(column) is null") }
        return text
    }

    /// A nullable text column.
    static func optionalText(_ row: SQLiteStatement, _ column: Int32) -> UnsafeBufferPointer<UInt8>? {
        guard sqlite3_column_type(row, column) != SQLITE_NULL, let pointer = sqlite3_column_text(row, column) else { return nil }
        return UnsafeBufferPointer(start: pointer, count: Int(sqlite3_column_bytes(row, column)))
    }
}
