import Foundation
import PostgresNIO
import StockroomCore
import StockroomStorage

extension PostgresStore {
    /// Resolves a start position against the database's head and trim watermark (not this daemon's
    /// hub: a cursor another daemon gave may be ahead of it).
    public func resolve(_ start: FeedStart) async throws -> Int64 {
        let (head, trimmed) = try await read { connection in try await self.watermarks(connection) }
        return try start.resolve(head: head, trimmed: trimmed, epoch: epoch)
    }

    /// The log's head and trim watermark, read in one statement (one snapshot).
    func watermarks(_ connection: PostgresConnection) async throws -> (head: Int64, trimmed: Int64) {
        let rows = try await connection.query(
            "SELECT (SELECT seq FROM log_head WHERE id = 1), (SELECT value FROM meta WHERE key = 'trimmed_through')", logger: logger
        ).collect()
        guard let (head, trimmed) = try rows.first?.decode((Int64, String).self) else {
            throw PostgresStoreError.schema("the database has no log_head row")
        }
        return (head, Int64(trimmed) ?? 0)
    }

    public func readChanges(after seq: Int64, filter: FeedFilter, limit: Int) async throws -> FeedPage {
        if let page = hub.recentChanges(after: seq, filter: filter, limit: limit) { return page }
        return try await readLoggedChanges(after: seq, filter: filter, limit: limit)
    }

    public func readEncodedChanges(after seq: Int64, filter: FeedFilter, limit: Int) async throws -> EncodedFeedPage {
        EncodedFeedPage(try await readChanges(after: seq, filter: filter, limit: limit))
    }

    /// Up to `limit` visible changes after `seq` from the table, with the head and trim watermark,
    /// in one statement: the entries up to a snapshot's head are exactly the ones it sees, since
    /// each transaction moves the head and inserts its entries together, in commit order.
    /// With no filter, every entry (the hub's catch-up reads), and no byte budget.
    func readLoggedChanges(after seq: Int64, filter: FeedFilter?, limit: Int) async throws -> FeedPage {
        var page = FeedPageBuilder(after: seq, filter: filter, limit: limit, budget: filter != nil)
        let statement = Statements.ReadChanges(after: seq, filter: filter, limit: Int64(page.rowsToRead), through: page.readThrough)
        let rows = try await read { connection in try await connection.rows(statement, logger: self.logger) }
        guard let first = rows.first else { throw PostgresStoreError.schema("the database has no log_head row") }
        let (head, trimmedText) = try first.decode((Int64, String).self, context: .default)
        guard seq >= Int64(trimmedText) ?? 0 else {
            throw StoreError.resyncRequired("the cursor is older than the retained log; start from a snapshot")
        }
        for row in rows {
            let columns = row.makeRandomAccess()
            guard try columns[2].decode(Int64?.self) != nil else { break }
            guard page.offer(try Self.entry(columns, epoch: epoch)) else { break }
        }
        return page.page(epoch: epoch, head: head)
    }

    /// The entry of a row whose columns from `offset` are seq, entity, op, entity_id, owner,
    /// value, origin_client_id, origin_idempotency_key, at, previous.
    static func entry(_ columns: PostgresRandomAccessRow, from offset: Int = 2, epoch: String) throws -> ChangeEntry {
        guard let entity = ChangeEntity(rawValue: try columns[offset + 1].decode(String.self)),
            let op = ChangeOp(rawValue: try columns[offset + 2].decode(String.self))
        else { throw PostgresStoreError.schema("corrupt change entry") }
        return ChangeEntry(
            seq: try columns[offset].decode(Int64.self), entity: entity, op: op, id: try columns[offset + 3].decode(String.self),
            owner: try columns[offset + 4].decode(String?.self).map(UserID.init(stored:)),
            valueJSON: try columns[offset + 5].decode(String?.self),
            before: ItemBefore(stored: try columns[offset + 9].decode(String?.self)),
            originClientID: try columns[offset + 6].decode(String?.self).map(ClientID.init(stored:)),
            originIdempotencyKey: try columns[offset + 7].decode(String?.self), at: try columns[offset + 8].decode(Int64.self),
            epoch: epoch)
    }

    /// Hands entries this daemon committed to the hub. The hub takes only what continues its head:
    /// when entries before these are missing (a transaction that committed just before this one,
    /// here or on another daemon, not yet published), everything past the head is read from the
    /// table instead (those transactions took the head before this one, so they are visible), or,
    /// with no subscriber here to read them, memory restarts at these entries.
    func publish(_ entries: [ChangeEntry]) async {
        if hub.committed(entries) { return }
        if hub.isIdle {
            hub.committed(tail: entries)
        } else {
            await catchUp()
        }
    }

    @discardableResult
    public func trimChanges(maxAge: Duration, maxEntries: Int) async throws -> Int {
        let cutoffTime = Timestamp.milliseconds(Date()) - Int64(maxAge.components.seconds) * 1000
        let trimmed: (removed: Int, through: Int64) = try await write { write in
            // One daemon trims at a time; the others find the lock taken and leave it to it.
            guard try await write.query("SELECT pg_try_advisory_xact_lock(\(Self.trimLockKey))").first?.decode(Bool.self) == true else {
                return (0, 0)
            }
            let (head, trimmedText) = try await write.query(
                "SELECT (SELECT seq FROM log_head WHERE id = 1), (SELECT value FROM meta WHERE key = 'trimmed_through')"
            ).first!.decode((Int64, String).self)
            let trimmedThrough = Int64(trimmedText) ?? 0
            // By age from the oldest end: everything before the first entry young enough to stay.
            let firstKept = try await write.query(
                "SELECT seq FROM changes WHERE seq > \(trimmedThrough) AND at >= \(cutoffTime) ORDER BY seq LIMIT 1"
            ).first?.decode(Int64.self)
            let byAge = firstKept.map { $0 - 1 } ?? head
            let through = max(byAge, head - Int64(maxEntries), trimmedThrough)
            guard through > trimmedThrough else { return (0, through) }
            let removed = try await write.query(
                "DELETE FROM changes WHERE seq > \(trimmedThrough) AND seq <= \(through) RETURNING 1"
            ).count
            try await write.query("UPDATE meta SET value = \(String(through)) WHERE key = 'trimmed_through'")
            return (removed, through)
        }
        hub.trimmed(through: trimmed.through)
        return trimmed.removed
    }

    static let trimLockKey: Int64 = 7_126_500_030

    public func logStatistics() async throws -> (entries: Int64, oldestSeq: Int64?) {
        let (head, trimmed) = try await read { connection in try await self.watermarks(connection) }
        return (head - trimmed, head > trimmed ? trimmed + 1 : nil)
    }
}
