import Foundation
import GRDB
import StockroomCore
import StockroomWire

/// One committed change, as the log keeps it.
public struct ChangeEntry: Sendable, Hashable {
    /// Commit-order position, without gaps.
    public var seq: Int64
    /// What kind of entity changed.
    public var entity: ChangeEntity
    /// Written or deleted.
    public var op: ChangeOp
    /// The item id or clientID.
    public var id: String
    /// The user a navigation change belongs to.
    public var owner: UserID?
    /// The JSON of the Item or Navigation after the change; nil for a delete.
    public var valueJSON: String?
    /// The device that caused it.
    public var originClientID: ClientID?
    /// The Idempotency-Key of the request that caused it.
    public var originIdempotencyKey: String?
    /// When it was committed (milliseconds since 1970).
    public var at: Int64

    /// The contract's `Change` JSON object, encoded once when the entry is read.
    public var json: String

    /// The `Change` JSON of an entry, built from the stored value without re-encoding it.
    public static func json(
        seq: Int64, epoch: String, entity: ChangeEntity, op: ChangeOp, id: String, valueJSON: String?,
        originClientID: String?, originIdempotencyKey: String?, at: Int64
    ) -> String {
        var json = JSONWriter(capacity: 160 + (valueJSON?.utf8.count ?? 4))
        ChangeJSON.write(
            seq: seq, epoch: epoch.utf8, entity: entity.rawValue, op: op.rawValue, id: id, value: valueJSON?.utf8,
            originClientID: originClientID, originIdempotencyKey: originIdempotencyKey, at: at, to: &json)
        return json.string
    }

    /// The entry of a row of `changes`, its JSON encoded for `epoch`.
    init(_ record: ChangeRecord, epoch: String) {
        seq = record.seq ?? 0
        entity = record.entity
        op = record.op
        id = record.entityID
        owner = record.owner
        valueJSON = record.value
        originClientID = record.originClientID
        originIdempotencyKey = record.originIdempotencyKey
        at = record.at
        json = Self.json(
            seq: seq, epoch: epoch, entity: entity, op: op, id: id, valueJSON: valueJSON,
            originClientID: originClientID?.rawValue, originIdempotencyKey: originIdempotencyKey, at: at)
    }
}

/// A batch of the feed.
public struct FeedPage: Sendable, Hashable {
    /// A page stops before its changes' JSON would pass this many bytes (but holds at least one
    /// change), and `hasMore` says the rest waits past its cursor: so one answer is bounded by
    /// bytes as well as by count. One change is at most about 12 KiB (the size limits on item
    /// names, drafts and paths), so a page holds at least ~85 of the largest changes.
    public static let byteBudget = 1 << 20

    /// The visible changes after the requested position, in commit order.
    public var changes: [ChangeEntry]
    /// Where to continue: past the last change returned, or past everything up to the head when complete.
    public var cursor: FeedCursor
    /// Whether more visible changes wait past `cursor`.
    public var hasMore: Bool
}

/// Where a subscriber starts reading.
public enum FeedStart: Sendable, Hashable {
    /// The beginning of the log.
    case beginning
    /// The head: only changes committed from now on.
    case now
    /// After this cursor.
    case after(FeedCursor)
}

extension AppDatabase {
    /// Resolves a start position to a seq, refusing (410) a cursor of another epoch, beyond the head or trimmed away.
    public func resolve(_ start: FeedStart) async throws -> Int64 {
        try await read { db in try Self.resolve(db, start, epoch: self.epoch) }
    }

    static func resolve(_ db: Database, _ start: FeedStart, epoch: String) throws -> Int64 {
        let head = try ChangeLog.head(db)
        let trimmed = try trimmedThrough(db)
        switch start {
        case .now:
            return head
        case .beginning:
            guard trimmed == 0 else {
                throw StoreError.resyncRequired("the beginning of the log was trimmed; start from a snapshot")
            }
            return 0
        case .after(let cursor):
            guard cursor.epoch == epoch else {
                throw StoreError.resyncRequired("the cursor belongs to another database epoch; start from a snapshot")
            }
            guard cursor.seq <= head else { throw StoreError.resyncRequired("the cursor is beyond the head of the log") }
            guard cursor.seq >= trimmed else {
                throw StoreError.resyncRequired("the cursor is older than the retained log; start from a snapshot")
            }
            return cursor.seq
        }
    }

    /// Up to `limit` visible changes after `seq`, read in one transaction; 410 if `seq` was trimmed meanwhile.
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
            if filter.topics.contains(.item) { visible.append(ChangeRecord.Columns.entity == ChangeEntity.item) }
            if filter.topics.contains(.navigation) {
                visible.append(ChangeRecord.Columns.entity == ChangeEntity.navigation && ChangeRecord.Columns.owner == filter.user)
            }
            guard !visible.isEmpty else { return FeedPage(changes: [], cursor: FeedCursor(epoch: self.epoch, seq: head), hasMore: false) }
            let records = try ChangeRecord
                .filter(ChangeRecord.Columns.seq > seq && visible.joined(operator: .or))
                .order(ChangeRecord.Columns.seq)
                .limit(limit + 1)
                .fetchAll(db)
            var changes: [ChangeEntry] = []
            var bytes = 0
            var hasMore = records.count > limit
            for record in records.prefix(limit) {
                let entry = ChangeEntry(record, epoch: self.epoch)
                bytes += entry.json.utf8.count
                if !changes.isEmpty, bytes > FeedPage.byteBudget {
                    hasMore = true
                    break
                }
                changes.append(entry)
            }
            let position = hasMore ? (changes.last?.seq ?? seq) : max(head, seq)
            return FeedPage(changes: changes, cursor: FeedCursor(epoch: self.epoch, seq: position), hasMore: hasMore)
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
