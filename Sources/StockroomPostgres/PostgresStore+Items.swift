import Foundation
import PostgresNIO
import StockroomCore
import StockroomStorage
import StockroomWire

/// A row of `items` (its `ItemRow.columns`).
struct ItemRow {
    static let columns = columns(of: nil)
    static let columnCount = 13

    /// The columns, qualified by a table or alias (`old.seq, …`) when there is one.
    static func columns(of table: String?) -> String {
        let names = [
            "seq", "id", "name", "color_name", "color_red", "color_green", "color_blue", "in_stock", "quantity", "is_on_back_order", "version",
            "created_at", "updated_at",
        ]
        return names.map { name in table.map { "\($0).\(name)" } ?? name }.joined(separator: ", ")
    }

    var seq: Int64
    var id: String
    var name: String
    var colorName: String?
    var colorRed: Double?
    var colorGreen: Double?
    var colorBlue: Double?
    var inStock: Bool
    var quantity: Int64?
    var isOnBackOrder: Bool?
    var version: Int64
    var createdAt: Int64
    var updatedAt: Int64

    init(_ row: PostgresRow) throws {
        (seq, id, name, colorName, colorRed, colorGreen, colorBlue, inStock, quantity, isOnBackOrder, version, createdAt, updatedAt) =
            try row.decode((Int64, String, String, String?, Double?, Double?, Double?, Bool, Int64?, Bool?, Int64, Int64, Int64).self)
    }

    /// The row in `columns` from `offset` (`columnCount` of them, in `columns` order).
    init(_ columns: PostgresRandomAccessRow, from offset: Int) throws {
        seq = try columns[offset].decode(Int64.self)
        id = try columns[offset + 1].decode(String.self)
        name = try columns[offset + 2].decode(String.self)
        colorName = try columns[offset + 3].decode(String?.self)
        colorRed = try columns[offset + 4].decode(Double?.self)
        colorGreen = try columns[offset + 5].decode(Double?.self)
        colorBlue = try columns[offset + 6].decode(Double?.self)
        inStock = try columns[offset + 7].decode(Bool.self)
        quantity = try columns[offset + 8].decode(Int64?.self)
        isOnBackOrder = try columns[offset + 9].decode(Bool?.self)
        version = try columns[offset + 10].decode(Int64.self)
        createdAt = try columns[offset + 11].decode(Int64.self)
        updatedAt = try columns[offset + 12].decode(Int64.self)
    }

    /// Writes validated fields into the row, as `UpdateItem` writes them into the table.
    mutating func apply(_ fields: ValidDraft) {
        let columns = ItemColumns(fields)
        name = columns.name
        colorName = columns.colorName
        colorRed = columns.colorRed
        colorGreen = columns.colorGreen
        colorBlue = columns.colorBlue
        inStock = columns.inStock
        quantity = columns.quantity.map(Int64.init)
        isOnBackOrder = columns.isOnBackOrder
    }

    var item: Item {
        get throws {
            guard let itemID = ItemID(id) else { throw PostgresStoreError.schema("corrupt item id \(id)") }
            return ItemColumns(
                name: name, colorName: colorName, colorRed: colorRed, colorGreen: colorGreen, colorBlue: colorBlue, inStock: inStock,
                quantity: quantity.map { Int($0) }, isOnBackOrder: isOnBackOrder
            ).item(id: itemID, version: Int(version), createdAt: createdAt, updatedAt: updatedAt)
        }
    }
}

extension PostgresStore {
    public func listItems(after: PageCursor?, limit: Int, query: String?, status: StatusFilter?) async throws -> ItemPage {
        var sql = "SELECT \(ItemRow.columns) FROM items WHERE deleted_at IS NULL"
        var bindings = PostgresBindings()
        if let after {
            bindings.append(after.seq)
            sql += " AND seq > $\(bindings.count)"
        }
        if let query, !query.isEmpty {
            // PostgreSQL text holds no NUL, and no stored name does: such a query matches nothing.
            if query.utf8.contains(0) { return ItemPage(items: [], next: nil) }
            bindings.append(query.lowercased())
            sql += " AND strpos(search_name, $\(bindings.count)) > 0"
        }
        if let status {
            bindings.append(status == .inStock)
            sql += " AND in_stock = $\(bindings.count)"
        }
        bindings.append(Int64(limit + 1))
        sql += " ORDER BY seq LIMIT $\(bindings.count)"
        let query = PostgresQuery(unsafeSQL: sql, binds: bindings)
        let rows = try await read { connection in
            try await connection.query(query, logger: self.logger).collect().map(ItemRow.init)
        }
        let page = rows.prefix(limit)
        return ItemPage(items: try page.map { try $0.item }, next: rows.count > limit ? page.last.map { PageCursor(seq: $0.seq) } : nil)
    }

    public func item(_ id: ItemID) async throws -> Item? {
        try await read { connection in
            try await connection.rows(Statements.ItemByID(id: id), logger: self.logger).first?.item
        }
    }

    @discardableResult
    public func createItem(id: ItemID?, draft: Draft, origin: Origin, idempotency: IdempotentRequest<Item>? = nil) async throws
        -> Replayable<Item>
    {
        // The id is chosen here, so that the create is planned (`PlannedInsert`) with it; a keyed
        // one only once its key is claimed with no stored answer (`answeringAhead`).
        let id = id ?? .random()
        let body: @Sendable (PostgresWrite) async throws -> Item = { write in
            try await WriteRules.createItem(write, id: id, draft: draft, origin: origin)
        }
        guard let plan = PlannedInsert(id: id, draft: draft) else { return try await perform(idempotency, body) }
        return try await perform(idempotency, plan: .insert(plan), body)
    }

    public func createItems(_ items: [BatchItem], origin: Origin, idempotency: IdempotentRequest<[ItemCreation]>? = nil) async throws
        -> Replayable<[ItemCreation]>
    {
        try await perform(idempotency) { write in try await WriteRules.createItems(write, items, origin: origin) }
    }

    @discardableResult
    public func updateItem(
        _ id: ItemID, draft: Draft, precondition: VersionPrecondition?, origin: Origin, idempotency: IdempotentRequest<Item>? = nil
    ) async throws -> Replayable<Item> {
        let body: @Sendable (PostgresWrite) async throws -> Item = { write in
            try await WriteRules.updateItem(write, id: id, draft: draft, precondition: precondition, origin: origin)
        }
        // The body's first step is the update: planned, several such writes of a batch share one
        // statement. A keyed one only once its key is claimed with no stored answer (`answeringAhead`).
        guard let plan = PlannedUpdate(id: id, draft: draft, precondition: precondition) else {
            return try await perform(idempotency, body)
        }
        return try await perform(idempotency, plan: .update(plan), body)
    }

    @discardableResult
    public func deleteItem(
        _ id: ItemID, precondition: VersionPrecondition?, origin: Origin, idempotency: IdempotentRequest<Void>? = nil
    ) async throws -> Replayable<Void> {
        try await perform(idempotency) { write in try await WriteRules.deleteItem(write, id: id, precondition: precondition, origin: origin) }
    }

    public func importItems(
        _ spool: ItemImportSpool, rejectedBefore: Int, options: ItemImportOptions, origin: Origin,
        idempotency: IdempotentRequest<ItemImportResult>?
    ) async throws -> Replayable<ItemImportResult> {
        do {
            return try await perform(idempotency, alone: true, position: { result, head in result.positioned(at: head) }) { write in
                try await WriteRules.importItems(
                    write, next: { try self.shutdown.checkImport(); return try spool.next() }, rejectedBefore: rejectedBefore, options: options,
                    origin: origin)
            }
        } catch let rolledBack as ItemImportRolledBack {
            return .fresh(rolledBack.result.positioned(at: try await resolve(.now)))
        }
    }

    @discardableResult
    public func seedDemoItems() async throws -> Bool {
        try await write { write in
            // Daemons starting together on an empty database seed it once.
            try await write.query("SELECT pg_advisory_xact_lock(\(Self.seedLockKey))")
            guard try await write.query("SELECT 1 FROM items LIMIT 1").isEmpty else { return false }
            try await WriteRules.insertDemoItems(write)
            return true
        }
    }

    static let seedLockKey: Int64 = 7_126_500_029
}
