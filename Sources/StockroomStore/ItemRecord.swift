import Foundation
import GRDB
import StockroomCore
import StockroomStorage

#if canImport(GRDBSQLite)
    import GRDBSQLite
#elseif canImport(SQLite3)
    import SQLite3
#endif

/// A row of `items`; the raw columns stay behind `Item`.
struct ItemRecord: Codable, PersistableRecord {
    static let databaseTableName = "items"

    var seq: Int64?
    var id: String
    var name: String
    var searchName: String
    var colorName: String?
    var colorRed: Double?
    var colorGreen: Double?
    var colorBlue: Double?
    var inStock: Bool
    var quantity: Int?
    var isOnBackOrder: Bool?
    var version: Int
    var createdAt: Int64
    var updatedAt: Int64
    var deletedAt: Int64?

    enum CodingKeys: String, CodingKey, CaseIterable {
        case seq, id, name
        case searchName = "search_name"
        case colorName = "color_name"
        case colorRed = "color_red"
        case colorGreen = "color_green"
        case colorBlue = "color_blue"
        case inStock = "in_stock"
        case quantity
        case isOnBackOrder = "is_on_back_order"
        case version
        case createdAt = "created_at"
        case updatedAt = "updated_at"
        case deletedAt = "deleted_at"
    }

    /// Every column, in the order `init(current:)` reads them by position.
    static let selectSQL = "SELECT " + CodingKeys.allCases.map(\.rawValue).joined(separator: ", ") + " FROM items"
    /// Whether an id exists or ever existed (tombstones included).
    static let existsSQL = "SELECT EXISTS (SELECT 1 FROM items WHERE \(CodingKeys.id.rawValue) = ?)"
    /// Marks the row of a seq deleted.
    static let tombstoneSQL = "UPDATE items SET \(CodingKeys.deletedAt.rawValue) = ? WHERE \(CodingKeys.seq.rawValue) = ?"
    /// Every column but `seq`, which SQLite assigns, for `insertCached`.
    private static let insertSQL: String = {
        let columns = columnsButSeq.map(\.rawValue)
        return "INSERT INTO items (\(columns.joined(separator: ", "))) VALUES (\(columns.map { _ in "?" }.joined(separator: ", ")))"
    }()

    enum Columns {
        static let seq = Column(CodingKeys.seq)
        static let id = Column(CodingKeys.id)
        static let searchName = Column(CodingKeys.searchName)
        static let inStock = Column(CodingKeys.inStock)
        static let deletedAt = Column(CodingKeys.deletedAt)
    }

    /// Reads the current row of a statement of `selectSQL` in place, through SQLite's C API: no
    /// `Row` (whose cursor builds a column-name dictionary per statement run) and no `DatabaseValue`
    /// per column.
    init(current row: SQLiteStatement) throws {
        seq = sqlite3_column_int64(row, 0)
        id = try SQLiteColumn.string(row, 1)
        name = try SQLiteColumn.string(row, 2)
        searchName = try SQLiteColumn.string(row, 3)
        colorName = SQLiteColumn.optionalString(row, 4)
        colorRed = SQLiteColumn.optionalDouble(row, 5)
        colorGreen = SQLiteColumn.optionalDouble(row, 6)
        colorBlue = SQLiteColumn.optionalDouble(row, 7)
        inStock = sqlite3_column_int64(row, 8) != 0
        quantity = SQLiteColumn.optionalInt64(row, 9).map { Int($0) }
        isOnBackOrder = SQLiteColumn.optionalInt64(row, 10).map { $0 != 0 }
        version = Int(sqlite3_column_int64(row, 11))
        createdAt = sqlite3_column_int64(row, 12)
        updatedAt = sqlite3_column_int64(row, 13)
        deletedAt = SQLiteColumn.optionalInt64(row, 14)
    }

    /// A new record at version 1.
    init(id: ItemID, fields: ValidDraft, at: Int64) {
        self.id = id.description
        self.name = ""
        self.searchName = ""
        self.inStock = true
        self.version = 1
        self.createdAt = at
        self.updatedAt = at
        apply(fields)
    }

    /// Writes validated fields into the record.
    mutating func apply(_ fields: ValidDraft) {
        let columns = ItemColumns(fields)
        name = columns.name
        searchName = columns.searchName
        colorName = columns.colorName
        colorRed = columns.colorRed
        colorGreen = columns.colorGreen
        colorBlue = columns.colorBlue
        inStock = columns.inStock
        quantity = columns.quantity
        isOnBackOrder = columns.isOnBackOrder
    }

    /// The domain value of the row.
    var item: Item {
        get throws {
            guard let itemID = ItemID(id) else { throw DatabaseError(message: "corrupt item id \(id)") }
            return ItemColumns(
                name: name, colorName: colorName, colorRed: colorRed, colorGreen: colorGreen, colorBlue: colorBlue, inStock: inStock,
                quantity: quantity, isOnBackOrder: isOnBackOrder
            ).item(id: itemID, version: version, createdAt: createdAt, updatedAt: updatedAt)
        }
    }

    /// Inserts the record with one cached statement: GRDB's `insert` encodes the record through
    /// `Encodable` into a container first.
    func insertCached(_ db: Database) throws {
        try db.cachedStatement(sql: Self.insertSQL).execute { binder in
            for column in Self.columnsButSeq { bind(column, &binder) }
        }
    }

    /// Updates the record's row (by `seq`) with one cached statement: GRDB's `update` encodes the
    /// record and builds its UPDATE anew on each call.
    func updateCached(_ db: Database) throws {
        guard let seq else { throw DatabaseError(message: "update of an item record without seq") }
        try db.cachedStatement(sql: Self.updateSQL).execute { binder in
            for column in Self.updatedColumns { bind(column, &binder) }
            binder.bind(seq)
        }
    }

    /// Binds a column's value as GRDB stores it (through SQLite's C API: `Statement.execute(binding:)`).
    private func bind(_ column: CodingKeys, _ binder: inout SQLiteBinder) {
        switch column {
        case .seq: binder.bind(seq)
        case .id: binder.bind(id)
        case .name: binder.bind(name)
        case .searchName: binder.bind(searchName)
        case .colorName: binder.bind(colorName)
        case .colorRed: binder.bind(colorRed)
        case .colorGreen: binder.bind(colorGreen)
        case .colorBlue: binder.bind(colorBlue)
        case .inStock: binder.bind(inStock)
        case .quantity: binder.bind(quantity)
        case .isOnBackOrder: binder.bind(isOnBackOrder)
        case .version: binder.bind(version)
        case .createdAt: binder.bind(createdAt)
        case .updatedAt: binder.bind(updatedAt)
        case .deletedAt: binder.bind(deletedAt)
        }
    }

    /// Every column but `seq`, which SQLite assigns: `insertSQL`'s, in `CodingKeys` order.
    private static let columnsButSeq = CodingKeys.allCases.filter { $0 != .seq }

    /// The columns an update may change: not `id` nor `created_at`, which never change. SQLite
    /// rewrites the entry of every index whose column an UPDATE sets, even to the value it has, so
    /// `SET id = ?` dirtied a page of the id index on every write (a WAL frame of four per PUT, at a
    /// random place of the index).
    private static let updatedColumns = columnsButSeq.filter { $0 != .id && $0 != .createdAt }

    /// The updated columns, set by `seq`, for `updateCached`.
    private static let updateSQL =
        "UPDATE items SET \(updatedColumns.map { "\($0.rawValue) = ?" }.joined(separator: ", ")) WHERE \(CodingKeys.seq.rawValue) = ?"

    /// The live (not deleted) record of `id`, if any.
    static func live(_ db: Database, id: ItemID) throws -> ItemRecord? {
        // A cached statement rather than the query interface (which prepares its statement anew): it runs on every item read and write.
        try db.cachedStatement(sql: liveSQL).readFirstRow(binding: { $0.bind(id.description) }) { try ItemRecord(current: $0) }
    }

    private static let liveSQL = selectSQL + " WHERE id = ? AND deleted_at IS NULL"
}
