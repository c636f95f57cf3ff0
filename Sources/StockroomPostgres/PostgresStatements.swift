import Logging
import PostgresNIO
import StockroomCore
import StockroomStorage

/// The statements of the request paths, prepared once per pooled connection (postgres-nio keeps
/// them by name on each connection): item reads and writes, navigation reads and saves, and the
/// feed's page. The head step is `PostgresWrite.AppendLog`.
enum Statements {
    /// BEGIN, prepared (`PostgresStore.transaction`).
    struct Begin: PostgresPreparedStatement {
        static let name = "stockroom_begin"
        static let sql = "BEGIN"
        typealias Row = PostgresRow
        func makeBindings() -> PostgresBindings { PostgresBindings() }
        func decodeRow(_ row: PostgresRow) throws -> PostgresRow { row }
    }

    /// Idempotency keys' advisory locks tried at once (`PostgresWrite.claimAhead`, and `claim` for
    /// one): each name's position (from 1) and whether its lock was taken.
    struct ClaimKeys: PostgresPreparedStatement {
        static let name = "stockroom_claim_keys"
        static let sql = """
            SELECT k.position, pg_try_advisory_xact_lock(hashtextextended(k.name, 0))
            FROM unnest($1::text[]) WITH ORDINALITY AS k(name, position)
            """
        typealias Row = (position: Int, claimed: Bool)
        var names: [String]
        func makeBindings() -> PostgresBindings {
            var bindings = PostgresBindings(capacity: 1)
            bindings.append(names)
            return bindings
        }
        func decodeRow(_ row: PostgresRow) throws -> Row {
            let (position, claimed) = try row.decode((Int64, Bool).self)
            return (Int(position), claimed)
        }
    }

    /// The stored answers of idempotency keys (`PostgresWrite.claimAhead`, `storedResponse`): a
    /// row for each key that has one, with the key's position (from 1). Each key is looked up by
    /// the primary key on its own (the LIMIT keeps the subquery from becoming a join): as a join, a
    /// plan made while the table was small (each connection keeps its first generic plan) scanned
    /// all of it.
    struct RecordsByKey: PostgresPreparedStatement {
        static let name = "stockroom_records_by_key"
        static let sql = """
            SELECT k.position, r.fingerprint, r.response
            FROM unnest($1::text[], $2::text[], $3::text[]) WITH ORDINALITY AS k(user_id, scope, key, position)
            CROSS JOIN LATERAL (
                SELECT fingerprint, response FROM idempotency_records i
                WHERE i.user_id = k.user_id AND i.scope = k.scope AND i.key = k.key LIMIT 1
            ) r
            """
        typealias Row = (position: Int, fingerprint: String, response: StoredResponse)
        var keys: [IdempotencyKey]
        func makeBindings() -> PostgresBindings {
            var bindings = PostgresBindings(capacity: 3)
            bindings.append(keys.map(\.user.rawValue))
            bindings.append(keys.map(\.scope.rawValue))
            bindings.append(keys.map(\.key))
            return bindings
        }
        func decodeRow(_ row: PostgresRow) throws -> Row {
            let (position, fingerprint, response) = try row.decode((Int64, String, ByteBuffer).self)
            return (Int(position), fingerprint, StoredResponse(bytes: Array(response.readableBytesView)))
        }
    }

    /// Several decided requests' stored answers (`PostgresWrite.flushRecords`).
    struct InsertRecords: PostgresPreparedStatement {
        static let name = "stockroom_insert_records"
        static let sql = """
            INSERT INTO idempotency_records (user_id, scope, key, fingerprint, response, created_at)
            SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::bytea[], $6::bigint[])
            """
        typealias Row = PostgresRow
        var records: [PostgresWrite.PendingRecord]
        func makeBindings() -> PostgresBindings {
            var bindings = PostgresBindings(capacity: 6)
            bindings.append(records.map(\.key.user.rawValue))
            bindings.append(records.map(\.key.scope.rawValue))
            bindings.append(records.map(\.key.key))
            bindings.append(records.map(\.fingerprint))
            bindings.append(records.map { ByteBuffer(bytes: $0.response.bytes) })
            bindings.append(records.map(\.at))
            return bindings
        }
        func decodeRow(_ row: PostgresRow) throws -> PostgresRow { row }
    }

    /// COMMIT, prepared (`PostgresStore.transaction`).
    struct Commit: PostgresPreparedStatement {
        static let name = "stockroom_commit"
        static let sql = "COMMIT"
        typealias Row = PostgresRow
        func makeBindings() -> PostgresBindings { PostgresBindings() }
        func decodeRow(_ row: PostgresRow) throws -> PostgresRow { row }
    }

    /// A live item by id.
    struct ItemByID: PostgresPreparedStatement {
        static let name = "stockroom_item_by_id"
        static let sql = "SELECT \(ItemRow.columns) FROM items WHERE id = $1 AND deleted_at IS NULL"
        typealias Row = ItemRow
        var id: ItemID
        func makeBindings() -> PostgresBindings { bindings(id.description) }
        func decodeRow(_ row: PostgresRow) throws -> ItemRow { try ItemRow(row) }
    }

    /// A live item by id, its row locked until the transaction ends.
    struct LockedItem: PostgresPreparedStatement {
        static let name = "stockroom_locked_item"
        static let sql = "SELECT \(ItemRow.columns) FROM items WHERE id = $1 AND deleted_at IS NULL FOR UPDATE"
        typealias Row = ItemRow
        var id: ItemID
        func makeBindings() -> PostgresBindings { bindings(id.description) }
        func decodeRow(_ row: PostgresRow) throws -> ItemRow { try ItemRow(row) }
    }

    /// A new item; no row when the id exists (live or deleted).
    struct InsertItem: PostgresPreparedStatement {
        static let name = "stockroom_insert_item"
        static let sql = """
            INSERT INTO items (id, name, search_name, color_name, color_red, color_green, color_blue, in_stock, quantity,
                               is_on_back_order, version, created_at, updated_at)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, 1, $11, $11)
            ON CONFLICT ON CONSTRAINT items_id_key DO NOTHING
            RETURNING \(ItemRow.columns)
            """
        typealias Row = ItemRow
        var id: ItemID
        var fields: ValidDraft
        var now: Int64
        func makeBindings() -> PostgresBindings {
            var bindings = PostgresBindings(capacity: 11)
            bindings.append(id.description)
            fields.append(to: &bindings)
            bindings.append(now)
            return bindings
        }
        func decodeRow(_ row: PostgresRow) throws -> ItemRow { try ItemRow(row) }
    }

    /// Several writes' `InsertItem` in one statement (`PostgresWrite.insertItems`): the inputs as
    /// text, cast here; a row comes back for each item inserted (none for an id that exists or
    /// existed), matched to its write by id.
    struct InsertItems: PostgresPreparedStatement {
        static let name = "stockroom_insert_items"
        static let sql = """
            INSERT INTO items (id, name, search_name, color_name, color_red, color_green, color_blue, in_stock, quantity,
                               is_on_back_order, version, created_at, updated_at)
            SELECT n_id, n_name, n_search_name, n_color_name, n_color_red::float8, n_color_green::float8, n_color_blue::float8,
                n_in_stock::boolean, n_quantity::bigint, n_is_on_back_order::boolean, 1, n_now::bigint, n_now::bigint
            FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[],
                        $10::text[], $11::text[])
                WITH ORDINALITY AS u(n_id, n_name, n_search_name, n_color_name, n_color_red, n_color_green, n_color_blue, n_in_stock,
                                     n_quantity, n_is_on_back_order, n_now, n)
            ORDER BY n
            ON CONFLICT ON CONSTRAINT items_id_key DO NOTHING
            RETURNING \(ItemRow.columns)
            """
        typealias Row = ItemRow
        var inserts: [PlannedInsert]
        func makeBindings() -> PostgresBindings {
            var bindings = PostgresBindings(capacity: 11)
            bindings.appendTextColumns(ids: inserts.map(\.id), fields: inserts.map(\.fields))
            bindings.append(NullableTextArray(inserts.map { "\($0.at)" }))
            return bindings
        }
        func decodeRow(_ row: PostgresRow) throws -> ItemRow { try ItemRow(row) }
    }

    /// An item's new fields and version.
    struct UpdateItem: PostgresPreparedStatement {
        static let name = "stockroom_update_item"
        static let sql = """
            UPDATE items SET name = $2, search_name = $3, color_name = $4, color_red = $5, color_green = $6, color_blue = $7,
                in_stock = $8, quantity = $9, is_on_back_order = $10, version = version + 1, updated_at = $11
            WHERE seq = $1
            RETURNING \(ItemRow.columns)
            """
        typealias Row = ItemRow
        var seq: Int64
        var fields: ValidDraft
        var now: Int64
        func makeBindings() -> PostgresBindings {
            var bindings = PostgresBindings(capacity: 11)
            bindings.append(seq)
            fields.append(to: &bindings)
            bindings.append(now)
            return bindings
        }
        func decodeRow(_ row: PostgresRow) throws -> ItemRow { try ItemRow(row) }
    }

    /// A live item's editable fields replaced by id, its row locked by the update itself, when
    /// `versions` is null or holds its version: no row when it is missing, deleted or at another
    /// version. `updated_at` never goes back.
    struct UpdateItemByID: PostgresPreparedStatement {
        static let name = "stockroom_update_item_by_id"
        /// The row is locked and read as it was (`old`), then written: the before and after of the
        /// change entry, in one statement.
        static let sql = """
            WITH old AS (
                SELECT \(ItemRow.columns) FROM items
                WHERE id = $1 AND deleted_at IS NULL AND ($12::bigint[] IS NULL OR version = ANY($12::bigint[]))
                FOR UPDATE
            )
            UPDATE items i SET name = $2, search_name = $3, color_name = $4, color_red = $5, color_green = $6, color_blue = $7,
                in_stock = $8, quantity = $9, is_on_back_order = $10, version = i.version + 1, updated_at = greatest($11, i.updated_at)
            FROM old WHERE i.seq = old.seq
            RETURNING \(ItemRow.columns(of: "old")), \(ItemRow.columns(of: "i"))
            """
        typealias Row = (before: ItemRow, after: ItemRow)
        var id: ItemID
        var fields: ValidDraft
        var now: Int64
        var versions: [Int64]?
        func makeBindings() -> PostgresBindings {
            var bindings = PostgresBindings(capacity: 12)
            bindings.append(id.description)
            fields.append(to: &bindings)
            bindings.append(now)
            bindings.append(versions)
            return bindings
        }
        func decodeRow(_ row: PostgresRow) throws -> (before: ItemRow, after: ItemRow) {
            let columns = row.makeRandomAccess()
            return (try ItemRow(columns, from: 0), try ItemRow(columns, from: ItemRow.columnCount))
        }
    }

    /// Several writes' `UpdateItemByID` in one statement (`PostgresWrite.updateLiveItems`): each
    /// input row is an item id (distinct), its new fields, the time and the versions allowed
    /// (comma-separated; null: any), all as text and cast here. The rows are locked in id order,
    /// as a write's own item reads are. A row comes back for each item written, with its input's
    /// position (`n`, from 1) and the item as it was and as it is.
    struct UpdateItemsByID: PostgresPreparedStatement {
        static let name = "stockroom_update_items_by_id"
        static let sql = """
            WITH input AS (
                SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[],
                                     $9::text[], $10::text[], $11::text[], $12::text[])
                    WITH ORDINALITY AS u(n_id, n_name, n_search_name, n_color_name, n_color_red, n_color_green, n_color_blue,
                                         n_in_stock, n_quantity, n_is_on_back_order, n_now, n_versions, n)
            ), old AS (
                SELECT \(ItemRow.columns(of: "items")), input.*
                FROM items JOIN input ON items.id = input.n_id
                WHERE items.deleted_at IS NULL
                    AND (input.n_versions IS NULL OR items.version = ANY(string_to_array(input.n_versions, ',')::bigint[]))
                ORDER BY items.id
                FOR UPDATE OF items
            )
            UPDATE items i SET name = old.n_name, search_name = old.n_search_name, color_name = old.n_color_name,
                color_red = old.n_color_red::float8, color_green = old.n_color_green::float8, color_blue = old.n_color_blue::float8,
                in_stock = old.n_in_stock::boolean, quantity = old.n_quantity::bigint, is_on_back_order = old.n_is_on_back_order::boolean,
                version = i.version + 1, updated_at = greatest(old.n_now::bigint, i.updated_at)
            FROM old WHERE i.seq = old.seq
            RETURNING old.n, \(ItemRow.columns(of: "old")), \(ItemRow.columns(of: "i"))
            """
        typealias Row = (position: Int, before: ItemRow, after: ItemRow)
        var updates: [PlannedUpdate]
        func makeBindings() -> PostgresBindings {
            var bindings = PostgresBindings(capacity: 12)
            bindings.appendTextColumns(ids: updates.map(\.id), fields: updates.map(\.fields))
            bindings.append(NullableTextArray(updates.map { "\($0.at)" }))
            bindings.append(NullableTextArray(updates.map { $0.versions.map { $0.map { "\($0)" }.joined(separator: ",") } }))
            return bindings
        }
        func decodeRow(_ row: PostgresRow) throws -> (position: Int, before: ItemRow, after: ItemRow) {
            let columns = row.makeRandomAccess()
            return (
                Int(try columns[0].decode(Int64.self)), try ItemRow(columns, from: 1), try ItemRow(columns, from: 1 + ItemRow.columnCount)
            )
        }
    }

    /// Several commands' item updates of rows this transaction locked (`PostgresWrite.flushItemUpdates`),
    /// each written only at the version it was read at: how many were written.
    struct UpdateItemsBySeq: PostgresPreparedStatement {
        static let name = "stockroom_update_items_by_seq"
        static let sql = """
            WITH input AS (
                SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[],
                                     $9::text[], $10::text[], $11::bigint[], $12::bigint[], $13::bigint[], $14::bigint[])
                    AS u(n_id, n_name, n_search_name, n_color_name, n_color_red, n_color_green, n_color_blue, n_in_stock, n_quantity,
                         n_is_on_back_order, n_seq, n_base, n_version, n_updated_at)
            ), written AS (
                UPDATE items i SET name = input.n_name, search_name = input.n_search_name, color_name = input.n_color_name,
                    color_red = input.n_color_red::float8, color_green = input.n_color_green::float8, color_blue = input.n_color_blue::float8,
                    in_stock = input.n_in_stock::boolean, quantity = input.n_quantity::bigint,
                    is_on_back_order = input.n_is_on_back_order::boolean, version = input.n_version, updated_at = input.n_updated_at
                FROM input WHERE i.seq = input.n_seq AND i.version = input.n_base
                RETURNING 1
            )
            SELECT count(*) FROM written
            """
        typealias Row = Int
        var updates: [DeferredItemUpdate]
        func makeBindings() -> PostgresBindings {
            var bindings = PostgresBindings(capacity: 14)
            bindings.appendTextColumns(ids: updates.map(\.row.id), fields: updates.map(\.fields))
            bindings.append(updates.map(\.row.seq))
            bindings.append(updates.map(\.base))
            bindings.append(updates.map(\.row.version))
            bindings.append(updates.map(\.row.updatedAt))
            return bindings
        }
        func decodeRow(_ row: PostgresRow) throws -> Int { Int(try row.decode(Int64.self)) }
    }

    /// Several clients' rows, not locked (`PostgresWrite.readAhead`).
    struct ClientsByID: PostgresPreparedStatement {
        static let name = "stockroom_clients_by_id"
        static let sql = "SELECT \(ClientRow.columns) FROM clients WHERE client_id = ANY($1::text[])"
        typealias Row = ClientRow
        var clientIDs: [ClientID]
        func makeBindings() -> PostgresBindings {
            var bindings = PostgresBindings(capacity: 1)
            bindings.append(clientIDs.map(\.rawValue))
            return bindings
        }
        func decodeRow(_ row: PostgresRow) throws -> ClientRow { try ClientRow(row) }
    }

    /// Several live items, their rows locked in id order until the transaction ends (`PostgresWrite.readAhead`).
    struct LockedItems: PostgresPreparedStatement {
        static let name = "stockroom_locked_items"
        static let sql = "SELECT \(ItemRow.columns) FROM items WHERE id = ANY($1::text[]) AND deleted_at IS NULL ORDER BY id FOR UPDATE"
        typealias Row = ItemRow
        var ids: [ItemID]
        func makeBindings() -> PostgresBindings {
            var bindings = PostgresBindings(capacity: 1)
            bindings.append(ids.map(\.description))
            return bindings
        }
        func decodeRow(_ row: PostgresRow) throws -> ItemRow { try ItemRow(row) }
    }

    /// Several devices' rows written at once (`PostgresWrite.flushSaves`), each only at the
    /// version read (`base`), their item references replaced (ids joined by commas); the count
    /// of rows written.
    struct SaveClients: PostgresPreparedStatement {
        static let name = "stockroom_save_clients"
        static let sql = """
            WITH input AS (
                SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $5::bigint[], $6::bigint[], $7::text[])
                    AS u(client_id, owner, state, version, base, updated_at, refs)
            ), saved AS (
                UPDATE clients c SET owner = input.owner, state = input.state, version = input.version, updated_at = input.updated_at
                FROM input WHERE c.client_id = input.client_id AND c.version = input.base
                RETURNING c.client_id, string_to_array(input.refs, ',') AS refs
            ), dropped AS (
                DELETE FROM client_item_refs r USING saved WHERE r.client_id = saved.client_id AND r.item_id <> ALL (saved.refs)
            ), refs AS (
                INSERT INTO client_item_refs (item_id, client_id)
                SELECT DISTINCT ref, saved.client_id FROM saved, unnest(saved.refs) AS ref
                ON CONFLICT DO NOTHING
            )
            SELECT count(*) FROM saved
            """
        typealias Row = Int
        var saves: [DeferredSave]
        func makeBindings() -> PostgresBindings {
            var bindings = PostgresBindings(capacity: 7)
            bindings.append(saves.map(\.clientID.rawValue))
            bindings.append(saves.map(\.owner.rawValue))
            bindings.append(saves.map(\.stateJSON))
            bindings.append(saves.map(\.version))
            bindings.append(saves.map(\.base))
            bindings.append(saves.map(\.updatedAt))
            bindings.append(saves.map { $0.referenced.joined(separator: ",") })
            return bindings
        }
        func decodeRow(_ row: PostgresRow) throws -> Int { Int(try row.decode(Int64.self)) }
    }

    /// A client's row, not locked.
    struct ClientByID: PostgresPreparedStatement {
        static let name = "stockroom_client_by_id"
        static let sql = "SELECT \(ClientRow.columns) FROM clients WHERE client_id = $1"
        typealias Row = ClientRow
        var clientID: ClientID
        func makeBindings() -> PostgresBindings { bindings(clientID.rawValue) }
        func decodeRow(_ row: PostgresRow) throws -> ClientRow { try ClientRow(row) }
    }

    /// A client's row, locked until the transaction ends.
    struct LockedClient: PostgresPreparedStatement {
        static let name = "stockroom_locked_client"
        static let sql = "SELECT \(ClientRow.columns) FROM clients WHERE client_id = $1 FOR UPDATE"
        typealias Row = ClientRow
        var clientID: ClientID
        func makeBindings() -> PostgresBindings { bindings(clientID.rawValue) }
        func decodeRow(_ row: PostgresRow) throws -> ClientRow { try ClientRow(row) }
    }

    /// Takes a transaction-scoped advisory lock named by text (`hashtextextended`).
    struct AdvisoryLock: PostgresPreparedStatement {
        static let name = "stockroom_advisory_lock"
        static let sql = "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))::text"
        typealias Row = String?
        var name: String
        func makeBindings() -> PostgresBindings { bindings(name) }
        func decodeRow(_ row: PostgresRow) throws -> String? { try row.decode(String?.self) }
    }

    /// A navigation's new version and the items it references, in one statement: the refs it no
    /// longer names are removed and the new ones added (`owner_change_seq` is set by the head step).
    struct SaveClient: PostgresPreparedStatement {
        static let name = "stockroom_save_client"
        static let sql = """
            WITH saved AS (
                INSERT INTO clients (client_id, owner, state, version, updated_at, owner_change_seq)
                VALUES ($1, $2, $3, $4, $5, 0)
                ON CONFLICT (client_id) DO UPDATE SET owner = excluded.owner, state = excluded.state, version = excluded.version,
                    updated_at = excluded.updated_at
                WHERE clients.version = excluded.version - 1
                RETURNING client_id
            ), dropped AS (
                DELETE FROM client_item_refs WHERE client_id IN (SELECT client_id FROM saved) AND item_id <> ALL ($6::text[])
            ), refs AS (
                INSERT INTO client_item_refs (item_id, client_id)
                SELECT DISTINCT refs.item_id, saved.client_id FROM saved, unnest($6::text[]) AS refs(item_id)
                ON CONFLICT DO NOTHING
            )
            SELECT count(*) FROM saved
            """
        /// 1 when the row was written; 0 when it was not at the version before `version` (or
        /// existed already, for version 1).
        typealias Row = Int64
        var clientID: ClientID
        var owner: UserID
        var stateJSON: String
        var version: Int64
        var now: Int64
        var referenced: [String]
        func makeBindings() -> PostgresBindings {
            var bindings = PostgresBindings(capacity: 6)
            bindings.append(clientID.rawValue)
            bindings.append(owner.rawValue)
            bindings.append(stateJSON)
            bindings.append(version)
            bindings.append(now)
            bindings.append(referenced)
            return bindings
        }
        func decodeRow(_ row: PostgresRow) throws -> Int64 { try row.decode(Int64.self) }
    }

    /// Up to `limit` entries after `after` that the filter lets through, with the head and the trim
    /// watermark, in one statement (one snapshot). With `all`, every entry.
    struct ReadChanges: PostgresPreparedStatement {
        static let name = "stockroom_read_changes"
        static let sql = """
            SELECT h.seq, (SELECT value FROM meta WHERE key = 'trimmed_through'),
                   c.seq, c.entity, c.op, c.entity_id, c.owner, c.value, c.origin_client_id, c.origin_idempotency_key, c.at, c.previous
            FROM log_head h
            LEFT JOIN LATERAL (
                SELECT * FROM changes
                WHERE seq > $1 AND seq <= $8 AND ($2 OR (entity = 'item' AND $3) OR (entity = 'navigation' AND $4 AND owner = $5)
                                    OR (entity = 'presence' AND $7 AND owner = $5))
                ORDER BY seq LIMIT $6
            ) c ON true
            WHERE h.id = 1
            ORDER BY c.seq
            """
        static let bindingDataTypes: [PostgresDataType] = [.int8, .bool, .bool, .bool, .text, .int8, .bool, .int8]
        typealias Row = PostgresRow
        var after: Int64
        var filter: FeedFilter?
        var limit: Int64
        /// The last seq the read looks at (`FeedPageBuilder.readThrough`).
        var through: Int64
        func makeBindings() -> PostgresBindings {
            var bindings = PostgresBindings(capacity: 8)
            bindings.append(after)
            bindings.append(filter == nil)
            bindings.append(filter?.follows(.item) ?? false)
            bindings.append(filter?.follows(.navigation) ?? false)
            bindings.append(filter?.user.rawValue ?? "")
            bindings.append(limit)
            bindings.append(filter?.follows(.presence) ?? false)
            bindings.append(through)
            return bindings
        }
        func decodeRow(_ row: PostgresRow) throws -> PostgresRow { row }
    }
}

extension ValidDraft {
    /// The fields as `InsertItem`, `UpdateItem` and `UpdateItemByID` bind them ($2-$10).
    func append(to bindings: inout PostgresBindings) {
        let columns = ItemColumns(self)
        bindings.append(columns.name)
        bindings.append(columns.searchName)
        bindings.append(columns.colorName)
        bindings.append(columns.colorRed)
        bindings.append(columns.colorGreen)
        bindings.append(columns.colorBlue)
        bindings.append(columns.inStock)
        bindings.append(columns.quantity.map(Int64.init))
        bindings.append(columns.isOnBackOrder)
    }
}

extension PostgresBindings {
    /// Several items' ids and fields as parallel `text[]` arrays, in the order `InsertItems` and
    /// `UpdateItemsByID` unnest them ($1-$10), each cast to its column's type in SQL.
    mutating func appendTextColumns(ids: [ItemID], fields: [ValidDraft]) {
        appendTextColumns(ids: ids.map(\.description), fields: fields)
    }

    /// `appendTextColumns`, with the ids as stored.
    mutating func appendTextColumns(ids: [String], fields: [ValidDraft]) {
        let columns = fields.map(ItemColumns.init)
        append(NullableTextArray(ids))
        append(NullableTextArray(columns.map(\.name)))
        append(NullableTextArray(columns.map(\.searchName)))
        append(NullableTextArray(columns.map(\.colorName)))
        append(NullableTextArray(columns.map { $0.colorRed.map { "\($0)" } }))
        append(NullableTextArray(columns.map { $0.colorGreen.map { "\($0)" } }))
        append(NullableTextArray(columns.map { $0.colorBlue.map { "\($0)" } }))
        append(NullableTextArray(columns.map { "\($0.inStock)" }))
        append(NullableTextArray(columns.map { $0.quantity.map { "\($0)" } }))
        append(NullableTextArray(columns.map { $0.isOnBackOrder.map { "\($0)" } }))
    }
}

/// Bindings of one text value.
private func bindings(_ value: String) -> PostgresBindings {
    var bindings = PostgresBindings(capacity: 1)
    bindings.append(value)
    return bindings
}

extension PostgresConnection {
    /// Runs a prepared statement (preparing it on this connection the first time) and reads all its rows.
    func rows<Statement: PostgresPreparedStatement>(_ statement: Statement, logger: Logger) async throws -> [Statement.Row] {
        var rows: [Statement.Row] = []
        for try await row in try await execute(statement, logger: logger) { rows.append(row) }
        return rows
    }
}

extension PostgresWrite {
    /// Runs a prepared statement in this transaction and reads all its rows, after the item
    /// updates deferred so far (`flushItemUpdates`).
    func rows<Statement: PostgresPreparedStatement>(_ statement: Statement) async throws -> [Statement.Row] {
        try await flushItemUpdates()
        try await openSavepoint()
        return try await connection.rows(statement, logger: logger)
    }
}
