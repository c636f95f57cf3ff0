import Foundation
import StockroomWire

/// A batch of the feed already written as the long-poll answer carries it: the changes' `Change`
/// JSON objects joined by commas, with the same limits and cursor as `FeedPage`.
public struct EncodedFeedPage: Sendable, Hashable {
    /// The changes' JSON, comma-separated, ready to go between `[` and `]`.
    public var changesJSON: [UInt8]
    /// How many changes `changesJSON` holds.
    public var count: Int
    /// Where to continue (as `FeedPage.cursor`).
    public var cursor: FeedCursor
    /// Whether more visible changes wait past `cursor`.
    public var hasMore: Bool

    package init(_ page: FeedPage) {
        var json = JSONWriter(capacity: page.changes.reduce(0) { $0 + $1.json.utf8.count + 1 })
        for (index, change) in page.changes.enumerated() {
            if index > 0 { json.raw(",") }
            json.raw(json: change.json.utf8)
        }
        self.init(changesJSON: json.bytes, count: page.changes.count, cursor: page.cursor, hasMore: page.hasMore)
    }

    package init(changesJSON: [UInt8], count: Int, cursor: FeedCursor, hasMore: Bool) {
        self.changesJSON = changesJSON
        self.count = count
        self.cursor = cursor
        self.hasMore = hasMore
    }
}
