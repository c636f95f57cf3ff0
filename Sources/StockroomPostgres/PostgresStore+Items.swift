import Foundation
import PostgresNIO
import StockroomCore
import StockroomStorage
import StockroomWire

/// A row of `items` (its `ItemRow.columns`).
struct ItemRow {
    static let columns =
        "seq, id, name, color_name, color_red, color_green, color_blue, in_stock, quantity, is_on_back_order, version, created_at, updated_at"

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

    var color: Color? {
        guard let colorName, let colorRed, let colorGreen, let colorBlue else { return nil }
        return Color(name: colorName, red: colorRed, green: colorGreen, blue: colorBlue)
    }

    var status: Status {
        inStock ? .inStock(quantity: Int(quantity ?? 0)) : .outOfStock(isOnBackOrder: isOnBackOrder ?? false)
    }

    var item: Item {
        get throws {
            guard let itemID = ItemID(id) else { throw PostgresStoreError.schema("corrupt item id \(id)") }
            return Item(
                id: itemID, name: name, color: color, status: status, version: Int(version),
                createdAt: Timestamp.date(milliseconds: createdAt), updatedAt: Timestamp.date(milliseconds: updatedAt))
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
        try await perform(idempotency) { write in try await Self.applyCreateItem(write, id: id, draft: draft, origin: origin) }
    }

    public func createItems(_ items: [BatchItem], origin: Origin, idempotency: IdempotentRequest<[ItemCreation]>? = nil) async throws
        -> Replayable<[ItemCreation]>
    {
        try await perform(idempotency) { write in
            var outcomes: [ItemCreation] = []
            outcomes.reserveCapacity(items.count)
            for entry in items {
                // A refusal (exists, invalid) writes nothing, so no savepoint is needed per item.
                do {
                    outcomes.append(.created(try await Self.applyCreateItem(write, id: entry.id, draft: entry.draft, origin: origin)))
                } catch let error as StoreError {
                    outcomes.append(.refused(error))
                }
            }
            return outcomes
        }
    }

    static func applyCreateItem(_ write: PostgresWrite, id: ItemID?, draft: Draft, origin: Origin) async throws -> Item {
        let id = id ?? .random()
        guard let item = try await insertItem(write, id: id, fields: try validated(draft), origin: origin) else {
            throw StoreError.alreadyExists(id)
        }
        return item
    }

    /// Inserts a new item and its change entry; nil when the id exists (live or deleted: ids are
    /// never reused). A transaction inserting the same id that has not committed yet makes this
    /// one wait for its outcome.
    static func insertItem(_ write: PostgresWrite, id: ItemID, fields: ValidDraft, origin: Origin) async throws -> Item? {
        let now = Timestamp.milliseconds(Date())
        guard let row = try await write.rows(Statements.InsertItem(id: id, fields: fields, now: now)).first else { return nil }
        let item = try row.item
        write.append(entity: .item, op: .upsert, id: item.id.description, owner: nil, value: item, origin: origin, at: now)
        return item
    }

    static func columns(of status: Status) -> (inStock: Bool, quantity: Int64?, isOnBackOrder: Bool?) {
        switch status {
        case .inStock(let quantity): (true, Int64(quantity), nil)
        case .outOfStock(let backOrdered): (false, nil, backOrdered)
        }
    }

    /// The live item `id`, its row locked until the transaction ends (a concurrent writer of it waits,
    /// then reads the version this one wrote).
    static func lockedItem(_ write: PostgresWrite, id: ItemID) async throws -> ItemRow? {
        try await write.rows(Statements.LockedItem(id: id)).first
    }

    @discardableResult
    public func updateItem(
        _ id: ItemID, draft: Draft, precondition: VersionPrecondition?, origin: Origin, idempotency: IdempotentRequest<Item>? = nil
    ) async throws -> Replayable<Item> {
        try await perform(idempotency) { write in
            // One statement checks, locks and updates the row; only when it changed nothing (or the
            // draft is invalid, which is answered after a missing item and a failed precondition)
            // is the row read to say why.
            let fields = Result { try Self.validated(draft) }
            if case .success(let fields) = fields {
                let versions: [Int64]? = if case .oneOf(let versions)? = precondition { versions.map(Int64.init) } else { nil }
                let now = Timestamp.milliseconds(Date())
                if let updated = try await write.rows(Statements.UpdateItemByID(id: id, fields: fields, now: now, versions: versions)).first {
                    return try Self.logged(write, updated, origin: origin)
                }
            }
            guard let row = try await Self.lockedItem(write, id: id) else { throw StoreError.notFound("no item \(id)") }
            if let precondition, !precondition.matches(Int(row.version)) {
                throw StoreError.preconditionFailed(currentVersion: Int(row.version))
            }
            return try await Self.writeItem(write, row, fields: try fields.get(), origin: origin)
        }
    }

    static func writeItem(_ write: PostgresWrite, _ row: ItemRow, fields: ValidDraft, origin: Origin) async throws -> Item {
        let now = max(Timestamp.milliseconds(Date()), row.updatedAt)
        guard let updated = try await write.rows(Statements.UpdateItem(seq: row.seq, fields: fields, now: now)).first else {
            throw PostgresStoreError.schema("UPDATE items returned no row")
        }
        return try logged(write, updated, origin: origin)
    }

    /// The item an update wrote, with its change entry appended (at the row's `updated_at`).
    static func logged(_ write: PostgresWrite, _ updated: ItemRow, origin: Origin) throws -> Item {
        let item = try updated.item
        write.append(entity: .item, op: .upsert, id: item.id.description, owner: nil, value: item, origin: origin, at: updated.updatedAt)
        return item
    }

    @discardableResult
    public func deleteItem(
        _ id: ItemID, precondition: VersionPrecondition?, origin: Origin, idempotency: IdempotentRequest<Void>? = nil
    ) async throws -> Replayable<Void> {
        try await perform(idempotency) { write in
            guard let row = try await Self.lockedItem(write, id: id) else { throw StoreError.notFound("no item \(id)") }
            if let precondition, !precondition.matches(Int(row.version)) {
                throw StoreError.preconditionFailed(currentVersion: Int(row.version))
            }
            try await Self.tombstone(write, row, origin: origin, exceptClient: nil)
        }
    }

    static func tombstone(_ write: PostgresWrite, _ row: ItemRow, origin: Origin, exceptClient: ClientID?) async throws {
        let now = Timestamp.milliseconds(Date())
        try await write.query("UPDATE items SET deleted_at = \(now) WHERE seq = \(row.seq)")
        write.append(entity: .item, op: .delete, id: row.id, owner: nil, value: Item?.none, origin: origin, at: now)
        try await repairNavigation(write, afterDeleting: try row.item.id, origin: origin, exceptClient: exceptClient, at: now)
    }

    @discardableResult
    public func seedDemoItems() async throws -> Bool {
        try await write { write in
            // Daemons starting together on an empty database seed it once.
            try await write.query("SELECT pg_advisory_xact_lock(\(Self.seedLockKey))")
            guard try await write.query("SELECT 1 FROM items LIMIT 1").isEmpty else { return false }
            let origin = Origin(user: UserID(stored: "demo"))
            for draft in DemoItems.drafts {
                guard try await Self.insertItem(write, id: .random(), fields: try Self.validated(draft), origin: origin) != nil else {
                    throw PostgresRetry()
                }
            }
            return true
        }
    }

    static let seedLockKey: Int64 = 7_126_500_029

    static func validated(_ draft: Draft) throws -> ValidDraft {
        do {
            return try ValidDraft(draft)
        } catch {
            throw StoreError.domain(error)
        }
    }
}
