import Foundation
import GRDB
import StockroomStorage

extension AppDatabase {
    /// The database as one consistent snapshot, to copy it whole into another backend
    /// (`StoreCopySource`); writes committed after this call are not in it.
    public func copySource() throws -> any StoreCopySource {
        guard let pool = writer as? DatabasePool else { throw StoreError.unavailable("a copy needs the database in WAL mode") }
        return SQLiteCopySource(snapshot: try pool.makeSnapshot())
    }
}

/// A snapshot of the SQLite database, read table by table in key order.
struct SQLiteCopySource: StoreCopySource {
    let snapshot: DatabaseSnapshot

    func copyPosition() throws -> CopiedPosition {
        try snapshot.read { db in
            func meta(_ key: String) throws -> String? {
                try String.fetchOne(db, sql: "SELECT value FROM meta WHERE key = ?", arguments: [key])
            }
            return CopiedPosition(
                epoch: try meta("epoch") ?? "", head: try ChangeLog.head(db), trimmedThrough: try AppDatabase.trimmedThrough(db),
                tokenGeneration: try AppDatabase.tokenGeneration(db), changeValueFormat: try meta("change_value_format") ?? "")
        }
    }

    func copyRows(_ table: CopiedTable, after: [CopiedValue]?, limit: Int) throws -> [[CopiedValue]] {
        let columns = table.columns
        let keys = columns.prefix(table.keyColumns).map { "\"\($0.name)\"" }
        var sql = "SELECT \(columns.map { "\"\($0.name)\"" }.joined(separator: ", ")) FROM \(table.rawValue)"
        var arguments = StatementArguments()
        if let after {
            sql += " WHERE (\(keys.joined(separator: ", "))) > (\(Array(repeating: "?", count: keys.count).joined(separator: ", ")))"
            for value in after { arguments += [value.databaseValue] }
        }
        sql += " ORDER BY \(keys.joined(separator: ", ")) LIMIT \(limit)"
        return try snapshot.read { db in
            try Row.fetchAll(db, sql: sql, arguments: arguments).map { row in
                try columns.indices.map { index in try CopiedValue(row[index] as DatabaseValue, kind: columns[index].kind, column: columns[index].name) }
            }
        }
    }
}

extension CopiedValue {
    init(_ value: DatabaseValue, kind: CopiedTable.Kind, column: String) throws {
        switch (value.storage, kind) {
        case (.null, _): self = .null
        case (.int64(let number), .boolean): self = .boolean(number != 0)
        case (.int64(let number), .integer): self = .integer(number)
        case (.int64(let number), .real): self = .real(Double(number))
        case (.double(let number), .real): self = .real(number)
        case (.string(let text), .text): self = .text(text)
        case (.blob(let data), .blob): self = .blob(Array(data))
        default: throw StoreError.unavailable("the SQLite database holds \(value) in \(column), which is not a \(kind)")
        }
    }

    var databaseValue: DatabaseValue {
        switch self {
        case .null: .null
        case .integer(let number): number.databaseValue
        case .real(let number): number.databaseValue
        case .text(let text): text.databaseValue
        case .blob(let bytes): Data(bytes).databaseValue
        case .boolean(let flag): (flag ? 1 : 0).databaseValue
        }
    }
}
