import Foundation
import GRDB
import StockroomCore
import StockroomStorage
import StockroomWire

#if canImport(GRDBSQLite)
    import GRDBSQLite
#elseif canImport(SQLite3)
    import SQLite3
#endif

extension AppDatabase {
    /// How many bytes a snapshot chunk holds at least before it is handed to the response (the last
    /// chunk may be smaller); one item more may push it a few hundred bytes past.
    public static let snapshotChunkBytes = 64 * 1024

    /// Streams the snapshot's JSON, `{"items": [Item], "navigation": [Navigation], "cursor"}`, from one
    /// read transaction: the cursor is the log's head as that transaction sees it, so following the
    /// feed from it misses nothing and repeats nothing. The rows are encoded straight from SQLite's
    /// columns into chunks of about `snapshotChunkBytes`; at most `depth` chunks wait for the
    /// consumer, and the reader thread blocks while they do (a slow client holds a reader and a few
    /// chunks, and writers go on committing, as WAL lets them). The transaction ends with the last
    /// chunk, when the consumer cancels the pipe, or when it took nothing for `stallTimeout`.
    ///
    /// The first chunk is sent as soon as the transaction has read the head, so a consumer that waits
    /// for it before answering can still answer an error (a storage failure) with a status.
    public func streamSnapshot(user: UserID, items filter: ItemFilter? = nil, depth: Int = 4, stallTimeout: Duration = .seconds(30))
        -> ChunkPipe
    {
        let epoch = self.epoch
        return streamRead(depth: depth, stallTimeout: stallTimeout) { db, pipe in
            try Self.writeSnapshot(db, user: user, items: filter, epoch: epoch, to: pipe)
        }
    }

    /// The snapshot readers, each held by a streamed read until its consumer has read it (more
    /// wait for one); requests read on readers of their own.
    public var maximumStreamedReads: Int { Self.maximumSnapshotReaders }

    /// Runs `body` in one read transaction on the snapshot reader, its chunks handed to the pipe
    /// returned; the pipe ends when `body` returns, or with its error (a database's mapped).
    func streamRead(depth: Int, stallTimeout: Duration, _ body: @escaping @Sendable (Database, ChunkPipe) throws -> Void) -> ChunkPipe {
        let pipe = ChunkPipe(depth: depth, stallTimeout: stallTimeout)
        (snapshotReader ?? writer).asyncRead { result in
            do {
                try body(try result.get(), pipe)
                pipe.finish()
            } catch let error as DatabaseError {
                pipe.finish(Self.mapped(error))
            } catch {
                pipe.finish(error)
            }
        }
        return pipe
    }

    /// Every live item and the user's navigation states with the feed position they are consistent
    /// with, collected from `streamSnapshot` (for tests and tools; the route streams).
    public func snapshot(user: UserID, items filter: ItemFilter? = nil) async throws -> Snapshot {
        let pipe = streamSnapshot(user: user, items: filter, depth: 64)
        var bytes: [UInt8] = []
        while let chunk = try await pipe.next() { bytes += chunk }
        return try JSONCoding.decoder().decode(Snapshot.self, from: Data(bytes))
    }

    /// The columns `writeItem` reads, by position; `NOT INDEXED` walks the table in rowid (= creation)
    /// order instead of the partial index plus one table lookup per row. SQL, not the query interface:
    /// it has no `NOT INDEXED`, and the rows are read in place through SQLite's C API.
    static let snapshotItemsSQL = """
        SELECT id, name, color_name, color_red, color_green, color_blue, in_stock, quantity, is_on_back_order,
               version, created_at, updated_at
        FROM items NOT INDEXED WHERE deleted_at IS NULL ORDER BY seq
        """

    /// Every live item's columns as `ItemRecord(current:)` reads them, in creation order.
    static let liveItemsSQL = ItemRecord.selectSQL + " NOT INDEXED WHERE deleted_at IS NULL ORDER BY seq"

    public func streamItems(matching filter: ItemFilter?, encoding: ItemStreamEncoding, depth: Int, stallTimeout: Duration) -> ChunkPipe {
        let epoch = self.epoch
        return streamRead(depth: depth, stallTimeout: stallTimeout) { db, pipe in
            try pipe.send(encoding.header(FeedCursor(epoch: epoch, seq: try ChangeLog.head(db))))
            var chunk = JSONWriter(capacity: ItemStreamEncoding.chunkBytes + 4096)
            let statement = try db.makeStatement(sql: Self.liveItemsSQL)
            let rows = try Row.fetchCursor(statement)
            while try rows.next() != nil {
                let item = try ItemRecord(current: statement.sqliteStatement).item
                if let filter, !filter.matches(item) { continue }
                encoding.item(item, &chunk)
                if chunk.bytes.count >= ItemStreamEncoding.chunkBytes {
                    try pipe.send(chunk.bytes)
                    chunk.removeAll()
                }
            }
            if !chunk.bytes.isEmpty { try pipe.send(chunk.bytes) }
        }
    }

    public func refilter(from old: ItemFilter?, to new: ItemFilter?, since: Int64) async throws -> Refilter {
        let epoch = self.epoch
        return try await read { db in
            let (head, changed) = try Self.refilterStart(db, since: since)
            var builder = RefilterBuilder(changed: changed, from: old, to: new)
            let statement = try db.makeStatement(sql: Self.liveItemsSQL)
            let rows = try Row.fetchCursor(statement)
            while try rows.next() != nil { builder.add(try ItemRecord(current: statement.sqliteStatement).item) }
            return builder.finish(cursor: FeedCursor(epoch: epoch, seq: head))
        }
    }

    public func streamRefilter(from old: ItemFilter?, to new: ItemFilter?, since: Int64, depth: Int, stallTimeout: Duration) -> ChunkPipe {
        let epoch = self.epoch
        return streamRead(depth: depth, stallTimeout: stallTimeout) { db, pipe in
            let (head, changed) = try Self.refilterStart(db, since: since)
            var writer = RefilterStreamWriter(changed: changed, from: old, to: new)
            let statement = try db.makeStatement(sql: Self.liveItemsSQL)
            let rows = try Row.fetchCursor(statement)
            while try rows.next() != nil {
                if let chunk = writer.add(try ItemRecord(current: statement.sqliteStatement).item) { try pipe.send(chunk) }
            }
            try pipe.send(writer.finish(cursor: FeedCursor(epoch: epoch, seq: head)))
        }
    }

    /// The log's head and the ids of the items changed after `since`, in the refilter's read; a
    /// cursor the log no longer reaches is a resync.
    private static func refilterStart(_ db: Database, since: Int64) throws -> (head: Int64, changed: Set<String>) {
        let head = try ChangeLog.head(db)
        guard since >= (try trimmedThrough(db)), since <= head else {
            throw StoreError.resyncRequired("the cursor is older than the retained log; start from a snapshot")
        }
        let changed = Set(
            try String.fetchAll(db, sql: "SELECT DISTINCT entity_id FROM changes WHERE seq > ? AND entity = 'item'", arguments: [since]))
        return (head, changed)
    }

    static func writeSnapshot(_ db: Database, user: UserID, items filter: ItemFilter?, epoch: String, to pipe: ChunkPipe) throws {
        let head = try ChangeLog.head(db)
        var json = JSONWriter(capacity: snapshotChunkBytes + 4096)
        SnapshotJSON.writeOpening(to: &json)
        try pipe.send(json.bytes)
        json.removeAll()
        // Under a filter each row becomes an Item to be matched; without one it is written in place.
        let statement = try db.makeStatement(sql: filter == nil ? snapshotItemsSQL : liveItemsSQL)
        let rows = try Row.fetchCursor(statement)
        let columns = statement.sqliteStatement
        var first = true
        while try rows.next() != nil {
            var matched: Item?
            if let filter {
                let item = try ItemRecord(current: columns).item
                guard filter.matches(item) else { continue }
                matched = item
            }
            if first { first = false } else { SnapshotJSON.writeSeparator(to: &json) }
            if let matched { matched.write(to: &json) } else { try writeItem(columns, to: &json) }
            if json.bytes.count >= snapshotChunkBytes {
                try pipe.send(json.bytes)
                json.removeAll()
            }
        }
        SnapshotJSON.writeItemsEnd(to: &json)
        let clients = try ClientRecord.filter(ClientRecord.Columns.owner == user.rawValue)
            .order(ClientRecord.Columns.ownerChangeSeq.desc).fetchCursor(db)
        first = true
        while let client = try clients.next() {
            if first { first = false } else { SnapshotJSON.writeSeparator(to: &json) }
            try client.navigation.write(to: &json)
        }
        SnapshotJSON.writeClosing(cursor: FeedCursor(epoch: epoch, seq: head), to: &json)
        try pipe.send(json.bytes)
    }

    /// Writes the Item of the current row of `snapshotItemsSQL`, read in place: the same JSON as
    /// `ItemRecord.item` then `Item.write(to:)`, without a `String` or an `Item` per row.
    static func writeItem(_ row: SQLiteStatement, to json: inout JSONWriter) throws {
        let color = (2...5).allSatisfy({ sqlite3_column_type(row, $0) != SQLITE_NULL })
            ? ColorJSON(
                name: try SQLiteColumn.text(row, 2), red: sqlite3_column_double(row, 3),
                green: sqlite3_column_double(row, 4), blue: sqlite3_column_double(row, 5))
            : nil
        let status: Status = sqlite3_column_int64(row, 6) != 0
            ? .inStock(quantity: Int(sqlite3_column_int64(row, 7)))
            : .outOfStock(isOnBackOrder: sqlite3_column_int64(row, 8) != 0)
        ItemJSON.write(
            id: try SQLiteColumn.text(row, 0), name: try SQLiteColumn.text(row, 1), color: color, status: status,
            version: sqlite3_column_int64(row, 9), createdAt: sqlite3_column_int64(row, 10),
            updatedAt: sqlite3_column_int64(row, 11), to: &json)
    }
}
