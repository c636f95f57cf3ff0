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

    /// A NOT NULL text column as a `String`.
    static func string(_ row: SQLiteStatement, _ column: Int32) throws -> String {
        String(decoding: try text(row, column), as: UTF8.self)
    }

    /// A nullable text column as a `String`.
    static func optionalString(_ row: SQLiteStatement, _ column: Int32) -> String? {
        optionalText(row, column).map { String(decoding: $0, as: UTF8.self) }
    }

    /// A nullable REAL column.
    static func optionalDouble(_ row: SQLiteStatement, _ column: Int32) -> Double? {
        sqlite3_column_type(row, column) == SQLITE_NULL ? nil : sqlite3_column_double(row, column)
    }

    /// A nullable INTEGER column.
    static func optionalInt64(_ row: SQLiteStatement, _ column: Int32) -> Int64? {
        sqlite3_column_type(row, column) == SQLITE_NULL ? nil : sqlite3_column_int64(row, column)
    }
}

extension Statement {
    /// Every row of the statement, each read in place by `read` through SQLite's C API. `Int64`'s
    /// cursor steps the statement without building a `Row` (GRDB's `Row` cursors build a
    /// column-name dictionary per run, and decode through `DatabaseValue`).
    func readRows<T>(arguments: StatementArguments = StatementArguments(), _ read: (SQLiteStatement) throws -> T) throws -> [T] {
        let steps = try Int64.fetchCursor(self, arguments: arguments)
        var rows: [T] = []
        while try steps.next() != nil {
            rows.append(try read(sqliteStatement))
        }
        return rows
    }

    /// The first row of the statement, read in place by `read`; nil when there is none.
    func readFirstRow<T>(arguments: StatementArguments = StatementArguments(), _ read: (SQLiteStatement) throws -> T) throws -> T? {
        let steps = try Int64.fetchCursor(self, arguments: arguments)
        guard try steps.next() != nil else { return nil }
        return try read(sqliteStatement)
    }
}
