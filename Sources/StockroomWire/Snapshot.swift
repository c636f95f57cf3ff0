import Foundation
import StockroomCore

/// What `GET /v1/snapshot` returns: every live item and the user's devices, read in one
/// transaction, and the cursor to follow the feed from so that nothing is missed or repeated.
public struct Snapshot: Hashable, Sendable, Codable {
    /// Every live item, in creation order.
    public var items: [Item]
    /// The navigation of every device of the token's user, most recently changed first.
    public var navigation: [Navigation]
    /// Where the feed continues.
    public var cursor: FeedCursor

    /// Creates a snapshot.
    public init(items: [Item], navigation: [Navigation], cursor: FeedCursor) {
        self.items = items
        self.navigation = navigation
        self.cursor = cursor
    }
}
