import Foundation
import StockroomWire

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

    public init(changes: [ChangeEntry], cursor: FeedCursor, hasMore: Bool) {
        self.changes = changes
        self.cursor = cursor
        self.hasMore = hasMore
    }
}

/// Builds a page from entries offered in seq order, the same way for every source (the hub's
/// memory, either log): what the filter shows of each (`FeedFilter.shown`), up to `limit` changes
/// and the byte budget, and the cursor past what it took. Item changes the item filter hides move
/// the cursor too, so a filtered feed over a busy log still advances.
package struct FeedPageBuilder {
    /// How many rows of its topics a log read looks at for one page under an item filter: the
    /// filter may hide all of them, and the page then ends there, `hasMore`, its cursor past them.
    package static let filteredScan = 2_000

    /// How many seqs past its start one page's log read walks, at most. A read's WHERE skips the
    /// entries of topics and owners the subscriber does not follow, but walking past them costs as
    /// much as reading them: unbounded, one page for a navigation-only follower, or for a user with
    /// few entries on a busy log, walked the log to its head. Past the window the page ends
    /// `hasMore`, its cursor at the window's end.
    package static let scanWindow: Int64 = 20_000

    /// The last seq a page after `seq` of `rowsToRead` rows may look at (`scanWindow`).
    package static func windowEnd(after seq: Int64, rowsToRead: Int) -> Int64 {
        seq + max(scanWindow, Int64(rowsToRead))
    }

    /// Nil: every entry (a hub's catch-up read, which has no window).
    let filter: FeedFilter?
    let limit: Int
    let budget: Bool
    private(set) var changes: [ChangeEntry] = []
    private var bytes = 0
    private var through: Int64
    /// The last seq this page looks at: a log read for it reads no further (the window; none for
    /// a hub's catch-up read).
    package let readThrough: Int64
    /// How many rows a log read asks for: one more than the page holds (to learn whether more
    /// follow), or `filteredScan` under an item filter.
    package let rowsToRead: Int
    private(set) var isFull = false
    /// How many entries of the followed topics were taken or passed over.
    private var looked = 0

    /// A page after `seq`; `budget`: bounded by `FeedPage.byteBudget` as well as by count.
    package init(after seq: Int64, filter: FeedFilter?, limit: Int, budget: Bool = true) {
        self.filter = filter
        self.limit = limit
        self.budget = budget
        through = seq
        let rows = filter?.items == nil ? limit + 1 : max(limit + 1, Self.filteredScan)
        rowsToRead = rows
        readThrough = filter == nil ? .max : Self.windowEnd(after: seq, rowsToRead: rows)
    }

    /// Whether the page has looked at `rowsToRead` entries: it ends there, `hasMore`, wherever
    /// they came from (memory or a log read of that many rows).
    var isExhausted: Bool { looked >= rowsToRead }

    /// Whether a page of `count` changes of `bytes` takes one more of `size` bytes: at most `limit`
    /// changes, and within the byte budget (when `budget`) unless it is the first.
    static func takes(_ size: Int, after count: Int, bytes: Int, limit: Int, budget: Bool = true) -> Bool {
        count < limit && (!budget || count == 0 || bytes + size <= FeedPage.byteBudget)
    }

    /// Offers the next entry; false when the page is full or has looked at all it may, and the
    /// entry was not taken.
    @discardableResult
    package mutating func offer(_ entry: ChangeEntry) -> Bool {
        guard !isFull, !isExhausted, entry.seq <= readThrough else { return false }
        // An entry of a topic the subscriber does not follow (which a log read does not even
        // read) leaves the cursor where it is; one its item filter hides moves it past.
        if let filter, !filter.sees(entity: entry.entity, owner: entry.owner) { return true }
        guard let shown = filter == nil ? entry : filter?.shown(entry) else {
            looked += 1
            through = entry.seq
            return true
        }
        let size = shown.json.utf8.count
        guard Self.takes(size, after: changes.count, bytes: bytes, limit: limit, budget: budget) else {
            isFull = true
            return false
        }
        bytes += size
        looked += 1
        changes.append(shown)
        through = entry.seq
        return true
    }

    /// The page: complete up to `head` unless it filled up or looked at all it may (then
    /// `hasMore`, its cursor past the last entry looked at) or the head lies past its window (then
    /// `hasMore`, its cursor at the window's end: every entry up to there was offered).
    package func page(epoch: String, head: Int64) -> FeedPage {
        if isFull || isExhausted { return FeedPage(changes: changes, cursor: FeedCursor(epoch: epoch, seq: through), hasMore: true) }
        if readThrough < head { return FeedPage(changes: changes, cursor: FeedCursor(epoch: epoch, seq: readThrough), hasMore: true) }
        return FeedPage(changes: changes, cursor: FeedCursor(epoch: epoch, seq: max(head, through)), hasMore: false)
    }
}
