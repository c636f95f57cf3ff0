import Foundation
import GRDB
import StockroomCore
import StockroomStorage
import StockroomWire

extension AppDatabase {
    /// A page of live items after position `after`, optionally filtered by name substring and status.
    public func listItems(after: PageCursor?, limit: Int, query: String?, status: StatusFilter?) async throws -> ItemPage {
        // SQLite's C API, as GRDB binds text, would cut the query at a NUL and match on what is
        // before it; no stored name holds a NUL (the same cut applies to writes, and names with
        // control characters are refused), so such a query matches nothing.
        if let query, query.utf8.contains(0) { return ItemPage(items: [], next: nil) }
        // SQL assembled from fixed fragments, so that each of the few shapes is one cached statement
        // (the query interface prepares its statement anew on every call).
        // NOT INDEXED: a page is a range of the table's rowid (seq) read in order, one seek then
        // consecutive rows; through the partial index every row is a seek of its own, which costs
        // more the deeper the table grows.
        var sql = ItemRecord.selectSQL + " NOT INDEXED WHERE deleted_at IS NULL"
        var arguments = StatementArguments()
        if let after {
            sql += " AND seq > ?"
            arguments += [after.seq]
        }
        if let query, !query.isEmpty {
            sql += " AND instr(search_name, ?) > 0"
            arguments += [query.lowercased()]
        }
        if let status {
            sql += " AND in_stock = ?"
            arguments += [status == .inStock]
        }
        sql += " ORDER BY seq LIMIT ?"
        arguments += [limit + 1]
        return try readNow { db in
            let records = try db.cachedStatement(sql: sql).readRows(arguments: arguments) { try ItemRecord(current: $0) }
            let page = records.prefix(limit)
            return ItemPage(
                items: try page.map { try $0.item },
                next: records.count > limit ? page.last?.seq.map(PageCursor.init(seq:)) : nil
            )
        }
    }

    /// The live item `id`, or nil when it does not exist or was deleted: from `itemCache` when an
    /// earlier read kept it and no commit has changed it since.
    public func item(_ id: ItemID) async throws -> Item? {
        switch itemCache.item(id) {
        case .hit(let item): return item
        case .miss(let generation):
            let item = try readNow { db in try ItemRecord.live(db, id: id)?.item }
            if let item { itemCache.keep(item, generation: generation) }
            return item
        }
    }

    /// Inserts a new item; an id that exists or ever existed is refused. With `idempotency`, a retry
    /// gets the first run's stored response and applies nothing.
    @discardableResult
    public func createItem(
        id: ItemID?, draft: Draft, origin: Origin, idempotency: IdempotentRequest<Item>? = nil
    ) async throws -> Replayable<Item> {
        try await perform(idempotency) { rows in try await WriteRules.createItem(rows, id: id, draft: draft, origin: origin) }
    }

    /// `createItem` inside the caller's transaction.
    func applyCreateItem(_ db: Database, id: ItemID?, draft: Draft, origin: Origin) throws -> Item {
        try SQLiteWriteRows.run(db, observer: observer) { rows in try await WriteRules.createItem(rows, id: id, draft: draft, origin: origin) }
    }

    /// Replaces the item's editable fields, if it exists and `precondition` holds. With `idempotency`,
    /// a retry gets the first run's stored response and applies nothing.
    @discardableResult
    public func updateItem(
        _ id: ItemID, draft: Draft, precondition: VersionPrecondition?, origin: Origin, idempotency: IdempotentRequest<Item>? = nil
    ) async throws -> Replayable<Item> {
        try await perform(idempotency) { rows in
            try await WriteRules.updateItem(rows, id: id, draft: draft, precondition: precondition, origin: origin)
        }
    }

    /// `updateItem` inside the caller's transaction.
    func applyUpdateItem(_ db: Database, id: ItemID, draft: Draft, precondition: VersionPrecondition?, origin: Origin) throws -> Item {
        try SQLiteWriteRows.run(db, observer: observer) { rows in
            try await WriteRules.updateItem(rows, id: id, draft: draft, precondition: precondition, origin: origin)
        }
    }

    /// Deletes the item (a tombstone) and repairs every navigation state pointing at it. With
    /// `idempotency`, a retry gets the first run's stored response and applies nothing.
    @discardableResult
    public func deleteItem(
        _ id: ItemID, precondition: VersionPrecondition?, origin: Origin, idempotency: IdempotentRequest<Void>? = nil
    ) async throws -> Replayable<Void> {
        try await perform(idempotency) { rows in try await WriteRules.deleteItem(rows, id: id, precondition: precondition, origin: origin) }
    }

    /// Seeds the four items of the inventory example into a database that has never held an item.
    @discardableResult
    public func seedDemoItems() async throws -> Bool {
        try await write { [observer] db in
            guard try ItemRecord.fetchCount(db) == 0 else { return false }
            try SQLiteWriteRows.run(db, observer: observer) { rows in try await WriteRules.insertDemoItems(rows) }
            return true
        }
    }
}
