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
