import Foundation
import PostgresNIO
import StockroomCore
import StockroomStorage
import StockroomWire

extension PostgresStore {
    /// How many bytes a snapshot chunk holds at least before it is handed to the response.
    static let snapshotChunkBytes = 64 * 1024

    /// Streams the snapshot's JSON from one REPEATABLE READ transaction: the cursor is the head
    /// that transaction sees, and the items and navigations are exactly those of that moment. Items
    /// are read a page at a time as the pipe takes chunks (`forEachLiveItem`), so a slow client
    /// holds one pooled connection, a page and a few chunks; past `stallTimeout` without a chunk
    /// taken, or once the transaction has been idle for PostgreSQL's
    /// `idle_in_transaction_session_timeout` (twice the deadline), the read ends (a long snapshot
    /// would hold back vacuum).
    public func streamSnapshot(user: UserID, items filter: ItemFilter?, depth: Int, stallTimeout: Duration) -> ChunkPipe {
        streamRead(depth: depth, stallTimeout: stallTimeout) { connection, pipe in
            try await self.writeSnapshot(connection, user: user, items: filter, to: pipe)
        }
    }

    /// Runs `body` in one REPEATABLE READ read-only transaction on a pooled connection, its chunks
    /// handed to the pipe returned; the pipe ends when `body` returns, or with its error (mapped).
    func streamRead(depth: Int, stallTimeout: Duration, _ body: @escaping @Sendable (PostgresConnection, ChunkPipe) async throws -> Void)
        -> ChunkPipe
    {
        let pipe = ChunkPipe(depth: depth, stallTimeout: stallTimeout)
        Task {
            do {
                try await self.leased { connection in
                    try await Self.transaction(
                        on: connection, begin: "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", logger: self.logger
                    ) { connection in
                        try await body(connection, pipe)
                    }
                }
                pipe.finish()
            } catch {
                pipe.finish(Self.mapped(error))
            }
        }
        return pipe
    }

    /// Half the daemon's connections: each streamed read holds one for as long as its client
    /// reads, and the other half stays for every other request.
    public var maximumStreamedReads: Int { max(1, pools.pools.reduce(0) { $0 + $1.limit } / 2) }

    /// How many items a streamed read takes from PostgreSQL in one query.
    static let streamedPageRows = 1000

    /// Every live item in `seq` order, for a streamed read: read in pages of `streamedPageRows`
    /// (keyset on `seq`, in the caller's REPEATABLE READ transaction, so the pages are one
    /// snapshot), each page's rows all received before `body` sees its first item. So `body` may
    /// wait on a slow client (a pipe's `send`) with no query's rows outstanding on the connection.
    /// postgres-nio (1.33.2) has a precondition in `RowStreamStateMachine.channelReadComplete` that
    /// a connection closing under a row stream waiting for its consumer can trip, and PostgreSQL
    /// closes the connection of a transaction idle past `idle_in_transaction_session_timeout` or on
    /// a restart; closed between pages, the connection fails the next query instead, and the read
    /// ends with that error. Each query is short, so `statement_timeout` bounds the page, not the
    /// whole read.
    func forEachLiveItem(_ connection: PostgresConnection, _ body: (Item) async throws -> Void) async throws {
        var after: Int64 = 0
        var page: [ItemRow] = []
        page.reserveCapacity(Self.streamedPageRows)
        while true {
            page.removeAll(keepingCapacity: true)
            for try await row in try await connection.query(
                """
                SELECT \(unescaped: ItemRow.columns) FROM items WHERE deleted_at IS NULL AND seq > \(after)
                ORDER BY seq LIMIT \(Self.streamedPageRows)
                """, logger: logger)
            {
                page.append(try ItemRow(row))
            }
            for row in page { try await body(row.item) }
            guard page.count == Self.streamedPageRows, let last = page.last else { return }
            after = last.seq
        }
    }

    private func writeSnapshot(_ connection: PostgresConnection, user: UserID, items filter: ItemFilter?, to pipe: ChunkPipe) async throws {
        guard let head = try await connection.query("SELECT seq FROM log_head WHERE id = 1", logger: logger).collect().first?
            .decode(Int64.self)
        else { throw PostgresStoreError.schema("the database has no log_head row") }
        var json = JSONWriter(capacity: Self.snapshotChunkBytes + 4096)
        SnapshotJSON.writeOpening(to: &json)
        try await pipe.send(json.bytes)
        json.removeAll()
        var first = true
        try await forEachLiveItem(connection) { item in
            if let filter, !filter.matches(item) { return }
            if first { first = false } else { SnapshotJSON.writeSeparator(to: &json) }
            item.write(to: &json)
            if json.bytes.count >= Self.snapshotChunkBytes {
                try await pipe.send(json.bytes)
                json.removeAll()
            }
        }
        SnapshotJSON.writeItemsEnd(to: &json)
        first = true
        let clients = try await connection.query(
            "SELECT \(unescaped: ClientRow.columns) FROM clients WHERE owner = \(user.rawValue) ORDER BY owner_change_seq DESC",
            logger: logger)
        for try await row in clients {
            if first { first = false } else { SnapshotJSON.writeSeparator(to: &json) }
            try ClientRow(row).navigation.write(to: &json)
        }
        SnapshotJSON.writeClosing(cursor: FeedCursor(epoch: epoch, seq: head), to: &json)
        try await pipe.send(json.bytes)
    }

    public func streamItems(matching filter: ItemFilter?, encoding: ItemStreamEncoding, depth: Int, stallTimeout: Duration) -> ChunkPipe {
        streamRead(depth: depth, stallTimeout: stallTimeout) { connection, pipe in
            let (head, _) = try await self.watermarks(connection)
            try await pipe.send(encoding.header(FeedCursor(epoch: self.epoch, seq: head)))
            var chunk = JSONWriter(capacity: ItemStreamEncoding.chunkBytes + 4096)
            try await self.forEachLiveItem(connection) { item in
                if let filter, !filter.matches(item) { return }
                encoding.item(item, &chunk)
                if chunk.bytes.count >= ItemStreamEncoding.chunkBytes {
                    try await pipe.send(chunk.bytes)
                    chunk.removeAll()
                }
            }
            if !chunk.bytes.isEmpty { try await pipe.send(chunk.bytes) }
        }
    }

    public func refilter(from old: ItemFilter?, to new: ItemFilter?, since: Int64) async throws -> Refilter {
        try await leased { connection in
            try await Self.transaction(on: connection, begin: "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", logger: self.logger) {
                connection in
                let (head, changed) = try await self.refilterStart(connection, since: since)
                var builder = RefilterBuilder(changed: changed, from: old, to: new)
                for try await row in try await connection.query(
                    "SELECT \(unescaped: ItemRow.columns) FROM items WHERE deleted_at IS NULL ORDER BY seq", logger: self.logger)
                {
                    builder.add(try ItemRow(row).item)
                }
                return builder.finish(cursor: FeedCursor(epoch: self.epoch, seq: head))
            }
        }
    }

    public func streamRefilter(from old: ItemFilter?, to new: ItemFilter?, since: Int64, depth: Int, stallTimeout: Duration) -> ChunkPipe {
        streamRead(depth: depth, stallTimeout: stallTimeout) { connection, pipe in
            let (head, changed) = try await self.refilterStart(connection, since: since)
            var writer = RefilterStreamWriter(changed: changed, from: old, to: new)
            try await self.forEachLiveItem(connection) { item in
                if let chunk = writer.add(item) { try await pipe.send(chunk) }
            }
            try await pipe.send(writer.finish(cursor: FeedCursor(epoch: self.epoch, seq: head)))
        }
    }

    /// The log's head and the ids of the items changed after `since`, in the refilter's
    /// transaction; a cursor the log no longer reaches is a resync.
    private func refilterStart(_ connection: PostgresConnection, since: Int64) async throws -> (head: Int64, changed: Set<String>) {
        let (head, trimmed) = try await watermarks(connection)
        guard since >= trimmed, since <= head else {
            throw StoreError.resyncRequired("the cursor is older than the retained log; start from a snapshot")
        }
        var changed: Set<String> = []
        for try await id in try await connection.query(
            "SELECT DISTINCT entity_id FROM changes WHERE seq > \(since) AND entity = 'item'", logger: logger
        ).decode(String.self) {
            changed.insert(id)
        }
        return (head, changed)
    }

    // MARK: Operations

    /// A real write in its own transaction: nil when it commits, else why not (PostgreSQL down or
    /// unreachable, read-only, out of space).
    public func writeProbe() async -> String? {
        do {
            // A health check gets its answer within two seconds, whatever PostgreSQL does.
            _ = try await withDeadline(min(deadline, .seconds(2))) {
                try await self.write { write in
                    try await write.query("UPDATE meta SET value = \(String(Timestamp.milliseconds(Date()))) WHERE key = 'ready_probe'")
                }
            }
            return nil
        } catch StoreError.unavailable(let message) {
            return message
        } catch {
            return "PostgreSQL cannot be written: \(String(reflecting: error))"
        }
    }

    /// Nothing to compact: PostgreSQL checkpoints by itself.
    public func checkpoint() throws -> Bool { false }

    /// A write waits for PostgreSQL within its statement and pool timeouts; an import gives up
    /// after `ShutdownClock.importGrace`.
    public func shutdownBegins(at instant: ContinuousClock.Instant) {
        shutdown.begin(at: instant)
    }
}
