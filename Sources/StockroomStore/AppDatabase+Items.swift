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

    /// The live item `id`, or nil when it does not exist or was deleted.
    public func item(_ id: ItemID) async throws -> Item? {
        try readNow { db in try ItemRecord.live(db, id: id)?.item }
    }

    /// Inserts a new item; an id that exists or ever existed is refused. With `idempotency`, a retry
    /// gets the first run's stored response and applies nothing.
    @discardableResult
    public func createItem(
        id: ItemID?, draft: Draft, origin: Origin, idempotency: IdempotentRequest<Item>? = nil
    ) async throws -> Replayable<Item> {
        try await perform(idempotency) { db in try Self.applyCreateItem(db, id: id, draft: draft, origin: origin) }
    }

    /// `createItem` inside the caller's transaction.
    static func applyCreateItem(_ db: Database, id: ItemID?, draft: Draft, origin: Origin) throws -> Item {
        let id = id ?? .random()
        // A cached statement, not the query interface (which prepares its statement anew): a batch import runs this once per item.
        if try Bool.fetchOne(db.cachedStatement(sql: ItemRecord.existsSQL), arguments: [id.description]) == true {
            throw StoreError.alreadyExists(id)
        }
        let fields = try validated(draft)
        return try insertItem(db, id: id, fields: fields, origin: origin)
    }

    static func insertItem(_ db: Database, id: ItemID, fields: ValidDraft, origin: Origin) throws -> Item {
        let now = Timestamp.milliseconds(Date())
        let record = ItemRecord(id: id, fields: fields, at: now)
        try record.insertCached(db)
        let item = try record.item
        try ChangeLog.append(db, entity: .item, op: .upsert, id: item.id.description, owner: nil, value: item, origin: origin, at: now)
        return item
    }

    /// Replaces the item's editable fields, if it exists and `precondition` holds. With `idempotency`,
    /// a retry gets the first run's stored response and applies nothing.
    @discardableResult
    public func updateItem(
        _ id: ItemID, draft: Draft, precondition: VersionPrecondition?, origin: Origin, idempotency: IdempotentRequest<Item>? = nil
    ) async throws -> Replayable<Item> {
        try await perform(idempotency) { db in
            try Self.applyUpdateItem(db, id: id, draft: draft, precondition: precondition, origin: origin)
        }
    }

    /// `updateItem` inside the caller's transaction.
    static func applyUpdateItem(_ db: Database, id: ItemID, draft: Draft, precondition: VersionPrecondition?, origin: Origin) throws -> Item {
        guard let record = try ItemRecord.live(db, id: id) else { throw StoreError.notFound("no item \(id)") }
        if let precondition, !precondition.matches(record.version) {
            throw StoreError.preconditionFailed(currentVersion: record.version)
        }
        return try writeItem(db, record, fields: try validated(draft), origin: origin)
    }

    static func writeItem(_ db: Database, _ record: ItemRecord, fields: ValidDraft, origin: Origin) throws -> Item {
        var record = record
        record.apply(fields)
        record.version += 1
        record.updatedAt = max(Timestamp.milliseconds(Date()), record.updatedAt)
        try record.updateCached(db)
        let item = try record.item
        try ChangeLog.append(db, entity: .item, op: .upsert, id: item.id.description, owner: nil, value: item, origin: origin, at: record.updatedAt)
        return item
    }

    /// Deletes the item (a tombstone) and repairs every navigation state pointing at it. With
    /// `idempotency`, a retry gets the first run's stored response and applies nothing.
    @discardableResult
    public func deleteItem(
        _ id: ItemID, precondition: VersionPrecondition?, origin: Origin, idempotency: IdempotentRequest<Void>? = nil
    ) async throws -> Replayable<Void> {
        try await perform(idempotency) { db in try Self.applyDeleteItem(db, id: id, precondition: precondition, origin: origin) }
    }

    /// `deleteItem` inside the caller's transaction.
    static func applyDeleteItem(_ db: Database, id: ItemID, precondition: VersionPrecondition?, origin: Origin) throws {
        guard let record = try ItemRecord.live(db, id: id) else { throw StoreError.notFound("no item \(id)") }
        if let precondition, !precondition.matches(record.version) {
            throw StoreError.preconditionFailed(currentVersion: record.version)
        }
        try tombstone(db, record, origin: origin, exceptClient: nil)
    }

    static func tombstone(_ db: Database, _ record: ItemRecord, origin: Origin, exceptClient: ClientID?) throws {
        let now = Timestamp.milliseconds(Date())
        // A cached statement, not the query interface (which prepares its statement anew): a delete command runs it.
        try db.cachedStatement(sql: ItemRecord.tombstoneSQL).execute(arguments: [now, record.seq])
        try ChangeLog.append(db, entity: .item, op: .delete, id: record.id, owner: nil, value: Item?.none, origin: origin, at: now)
        let id = try record.item.id
        try repairNavigation(db, afterDeleting: id, origin: origin, exceptClient: exceptClient, at: now)
    }

    /// Seeds the four items of the inventory example into a database that has never held an item.
    @discardableResult
    public func seedDemoItems() async throws -> Bool {
        try await write { db in
            guard try ItemRecord.fetchCount(db) == 0 else { return false }
            let origin = Origin(user: UserID(stored: "demo"))
            for draft in DemoItems.drafts {
                _ = try Self.insertItem(db, id: .random(), fields: try Self.validated(draft), origin: origin)
            }
            return true
        }
    }

    static func validated(_ draft: Draft) throws -> ValidDraft {
        do {
            return try ValidDraft(draft)
        } catch {
            throw StoreError.domain(error)
        }
    }
}
