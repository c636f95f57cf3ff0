import Foundation
import GRDB
import StockroomCore
import StockroomStorage
import StockroomWire

extension AppDatabase {
    /// Resolves a start position to a seq, refusing (`resyncRequired`) a cursor of another epoch, beyond the head or trimmed away.
    public func resolve(_ start: FeedStart) async throws -> Int64 {
        try await read { db in try Self.resolve(db, start, epoch: self.epoch) }
    }

    static func resolve(_ db: Database, _ start: FeedStart, epoch: String) throws -> Int64 {
        try start.resolve(head: try ChangeLog.head(db), trimmed: try trimmedThrough(db), epoch: epoch)
    }

    /// Up to `limit` visible changes after `seq`, read in one transaction; `resyncRequired` if `seq` was trimmed meanwhile.
    /// Recent changes come from the hub's memory (read once per commit for every subscriber);
    /// older ones from the log.
    public func readChanges(after seq: Int64, filter: FeedFilter, limit: Int) async throws -> FeedPage {
        if let page = hub.recentChanges(after: seq, filter: filter, limit: limit) { return page }
        return try await readLoggedChanges(after: seq, filter: filter, limit: limit)
    }

    /// `readChanges` from the log itself.
    func readLoggedChanges(after seq: Int64, filter: FeedFilter, limit: Int) async throws -> FeedPage {
        try await read { db in
            let head = try ChangeLog.head(db)
            guard seq >= (try Self.trimmedThrough(db)) else {
                throw StoreError.resyncRequired("the cursor is older than the retained log; start from a snapshot")
            }
            var visible: [SQLExpression] = []
            if filter.follows(.item) { visible.append(ChangeRecord.Columns.entity == ChangeEntity.item) }
            for entity in [ChangeEntity.navigation, .presence] where filter.follows(entity) {
                visible.append(ChangeRecord.Columns.entity == entity && ChangeRecord.Columns.owner == filter.user)
            }
            guard !visible.isEmpty else { return FeedPage(changes: [], cursor: FeedCursor(epoch: self.epoch, seq: head), hasMore: false) }
            var page = FeedPageBuilder(after: seq, filter: filter, limit: limit)
            let records = try ChangeRecord
                .filter(ChangeRecord.Columns.seq > seq && ChangeRecord.Columns.seq <= page.readThrough && visible.joined(operator: .or))
                .order(ChangeRecord.Columns.seq)
                .limit(page.rowsToRead)
                .fetchAll(db)
            for record in records where !page.offer(ChangeEntry(record, epoch: self.epoch)) { break }
            return page.page(epoch: self.epoch, head: head)
        }
    }

    /// Trims the log to entries younger than `maxAge` and at most `maxEntries`; returns how many went.
    @discardableResult
    public func trimChanges(maxAge: Duration, maxEntries: Int) async throws -> Int {
        let cutoffTime = Timestamp.milliseconds(Date()) - Int64(maxAge.components.seconds) * 1000
        let trimmed: (removed: Int, through: Int64) = try await write { db in
            let head = try ChangeLog.head(db)
            let trimmedThrough = try Self.trimmedThrough(db)
            // The log is trimmed by age from its oldest end: everything before the first entry young
            // enough to stay. A walk in rowid order from the oldest entry, which stops there, so it
            // reads about what it trims. (max(seq) WHERE at < cutoff would walk back from the head
            // through the whole retained log, in the writer's transaction, every round.)
            let firstKept = try ChangeRecord
                .filter(ChangeRecord.Columns.seq > trimmedThrough && ChangeRecord.Columns.at >= cutoffTime)
                .order(ChangeRecord.Columns.seq)
                .select(ChangeRecord.Columns.seq, as: Int64.self)
                .fetchOne(db)
            let byAge = firstKept.map { $0 - 1 } ?? head
            let bySize = head - Int64(maxEntries)
            let through = max(byAge, bySize, trimmedThrough)
            guard through > trimmedThrough else { return (0, through) }
            let removed = try ChangeRecord.filter(ChangeRecord.Columns.seq <= through).deleteAll(db)
            try MetaRecord(key: .trimmedThrough, value: "\(through)").update(db)
            return (removed, through)
        }
        hub.trimmed(through: trimmed.through)
        return trimmed.removed
    }

    /// The log's size and oldest retained seq (the log has no gaps, so both follow from the watermarks).
    public func logStatistics() async throws -> (entries: Int64, oldestSeq: Int64?) {
        try await read { db in
            let head = try ChangeLog.head(db)
            let trimmed = try Self.trimmedThrough(db)
            return (head - trimmed, head > trimmed ? trimmed + 1 : nil)
        }
    }

    static func trimmedThrough(_ db: Database) throws -> Int64 {
        Int64(try MetaRecord.value(db, .trimmedThrough) ?? "0") ?? 0
    }
}
