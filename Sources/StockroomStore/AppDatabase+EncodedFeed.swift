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
    /// `readChanges`, written for a batch answer: recent changes from the hub's memory, older ones
    /// encoded straight from the log's columns into one buffer, with no row, entry or string per
    /// change (catching up from deep in the log reads thousands of changes per request).
    ///
    /// A full page from the log starts the read of the next one at once (`FeedPagePrefetch`): a
    /// client catching up asks for it as soon as it has parsed this one, and then finds it read.
    /// A full page's successor holds committed entries only, which never change; a cursor trimmed
    /// away meanwhile is still refused.
    public func readEncodedChanges(after seq: Int64, filter: FeedFilter, limit: Int) async throws -> EncodedFeedPage {
        if let page = hub.recentChanges(after: seq, filter: filter, limit: limit) { return EncodedFeedPage(page) }
        // An item filter needs each entry's items: the entries' path.
        if filter.items != nil { return EncodedFeedPage(try await readLoggedChanges(after: seq, filter: filter, limit: limit)) }
        let key = FeedPagePrefetch.Key(seq: seq, filter: filter, limit: limit)
        let page: EncodedFeedPage
        if let prefetched = feedPrefetch.take(key), let read = try? await prefetched.value, seq >= hub.trimmedThrough {
            page = read
        } else {
            page = try await readLoggedPage(key)
        }
        if page.hasMore {
            let next = FeedPagePrefetch.Key(seq: page.cursor.seq, filter: filter, limit: limit)
            feedPrefetch.put(next, Task { try await readLoggedPage(next) })
        }
        return page
    }

    private func readLoggedPage(_ key: FeedPagePrefetch.Key) async throws -> EncodedFeedPage {
        let epoch = self.epoch
        return try await read { db in
            try Self.encodedLoggedChanges(db, after: key.seq, filter: key.filter, limit: key.limit, epoch: epoch)
        }
    }

    static func encodedLoggedChanges(_ db: Database, after seq: Int64, filter: FeedFilter, limit: Int, epoch: String) throws
        -> EncodedFeedPage
    {
        let head = try ChangeLog.head(db)
        guard seq >= (try trimmedThrough(db)) else {
            throw StoreError.resyncRequired("the cursor is older than the retained log; start from a snapshot")
        }
        // Cached SQL, not the query interface (which prepares its statement anew on every call): a
        // page is read in place through SQLite's C API, its columns by position in this order.
        let columns = "SELECT seq, entity, op, entity_id, value, origin_client_id, origin_idempotency_key, at FROM changes"
        // The items clause and the owner's entities (navigation, presence), each only when followed.
        // The window (`FeedPageBuilder.scanWindow`): the read walks no further past `seq`.
        let windowEnd = FeedPageBuilder.windowEnd(after: seq, rowsToRead: limit + 1)
        var arguments: StatementArguments = [seq, windowEnd]
        var visible: [String] = []
        if filter.follows(.item) { visible.append("entity = 'item'") }
        let owned = [ChangeEntity.navigation, .presence].filter(filter.follows)
        if !owned.isEmpty {
            let entities = owned.map { "'\($0.rawValue)'" }.joined(separator: ", ")
            visible.append(owned.count == 1 ? "(entity = \(entities) AND owner = ?)" : "(entity IN (\(entities)) AND owner = ?)")
            arguments += [filter.user.rawValue]
        }
        guard !visible.isEmpty else {
            return EncodedFeedPage(changesJSON: [], count: 0, cursor: FeedCursor(epoch: epoch, seq: head), hasMore: false)
        }
        let statement = try db.cachedStatement(
            sql: columns + " WHERE seq > ? AND seq <= ? AND " + (visible.count == 1 ? visible[0] : "(" + visible.joined(separator: " OR ") + ")")
                + " ORDER BY seq LIMIT ?")
        arguments += [limit + 1]
        let rows = try Row.fetchCursor(statement, arguments: arguments)
        let row = statement.sqliteStatement
        let epochBytes = Array(epoch.utf8)
        var json = JSONWriter(capacity: 64 * 1024)
        var count = 0
        var bytes = 0
        var lastSeq = seq
        var hasMore = false
        while try rows.next() != nil {
            if count == limit {
                hasMore = true
                break
            }
            let start = json.bytes.count
            if count > 0 { json.raw(",") }
            let entryStart = json.bytes.count
            let entrySeq = sqlite3_column_int64(row, 0)
            try writeChange(row, seq: entrySeq, epoch: epochBytes, to: &json)
            bytes += json.bytes.count - entryStart
            if count > 0, bytes > FeedPage.byteBudget {
                json.truncate(to: start)
                hasMore = true
                break
            }
            count += 1
            lastSeq = entrySeq
        }
        let position: Int64
        if hasMore {
            position = lastSeq
        } else if windowEnd < head {
            // Every entry up to the window's end was read: the rest waits past it.
            hasMore = true
            position = windowEnd
        } else {
            position = max(head, seq)
        }
        return EncodedFeedPage(changesJSON: json.bytes, count: count, cursor: FeedCursor(epoch: epoch, seq: position), hasMore: hasMore)
    }

    /// The `Change` JSON of the current row (the columns of `encodedLoggedChanges`), its text read in place.
    private static func writeChange(_ row: SQLiteStatement, seq: Int64, epoch: [UInt8], to json: inout JSONWriter) throws {
        ChangeJSON.write(
            seq: seq, epoch: epoch, entity: try SQLiteColumn.text(row, 1), op: try SQLiteColumn.text(row, 2),
            id: try SQLiteColumn.text(row, 3), value: SQLiteColumn.optionalText(row, 4),
            originClientID: SQLiteColumn.optionalText(row, 5), originIdempotencyKey: SQLiteColumn.optionalText(row, 6),
            at: sqlite3_column_int64(row, 7), to: &json)
    }
}
