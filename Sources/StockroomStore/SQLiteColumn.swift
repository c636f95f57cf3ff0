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

    /// `readRows` with the statement's parameters bound by `bind` (`execute(binding:)`).
    func readRows<T>(binding bind: (inout SQLiteBinder) -> Void, _ read: (SQLiteStatement) throws -> T) throws -> [T] {
        try self.bind(bind)
        let steps = try Int64.fetchCursor(self, arguments: nil)
        var rows: [T] = []
        while try steps.next() != nil {
            rows.append(try read(sqliteStatement))
        }
        return rows
    }

    /// `readFirstRow` with the statement's parameters bound by `bind` (`execute(binding:)`).
    func readFirstRow<T>(binding bind: (inout SQLiteBinder) -> Void, _ read: (SQLiteStatement) throws -> T) throws -> T? {
        try self.bind(bind)
        let steps = try Int64.fetchCursor(self, arguments: nil)
        guard try steps.next() != nil else { return nil }
        return try read(sqliteStatement)
    }

    /// The first row of the statement, read in place by `read`; nil when there is none.
    func readFirstRow<T>(arguments: StatementArguments = StatementArguments(), _ read: (SQLiteStatement) throws -> T) throws -> T? {
        let steps = try Int64.fetchCursor(self, arguments: arguments)
        guard try steps.next() != nil else { return nil }
        return try read(sqliteStatement)
    }
}

extension Statement {
    /// Runs the statement with its parameters bound by `bind`, in order, through SQLite's C API.
    /// GRDB's `execute(arguments:)` binds through `StatementArguments` (an array of `DatabaseValue`,
    /// each from an existential) and a nested closure per parameter. The statement still runs
    /// through GRDB's `execute()`, and so through its observation of what changed.
    func execute(binding bind: (inout SQLiteBinder) -> Void) throws {
        try self.bind(bind)
        try execute()
    }

    /// Binds the statement's parameters for a run through GRDB without arguments (which then keeps them).
    private func bind(_ bind: (inout SQLiteBinder) -> Void) throws {
        // SQLite's reset returns the error of the last run when it failed (that error was thrown to
        // that run's caller already). Reset here, its result set aside, so that the reset inside
        // `setUncheckedArguments`, which GRDB does not let fail, finds the statement clean.
        sqlite3_reset(sqliteStatement)
        // Clears the bindings and marks them bound and valid, so that a run without arguments keeps what follows.
        setUncheckedArguments(StatementArguments())
        var binder = SQLiteBinder(statement: sqliteStatement)
        bind(&binder)
        guard binder.count == sqlite3_bind_parameter_count(sqliteStatement) else {
            throw DatabaseError(message: "\(binder.count) parameters bound for \(sqlite3_bind_parameter_count(sqliteStatement)): \(sql)")
        }
    }
}
