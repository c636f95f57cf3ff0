import Foundation
import StockroomCore
import StockroomWire
import Synchronization

/// Everything a client needs to start following the feed.
public struct Snapshot: Sendable, Hashable {
    /// Every live item, in creation order.
    public var items: [Item]
    /// The caller's written navigation states.
    public var navigation: [Navigation]
    /// The feed position the snapshot is consistent with.
    public var cursor: FeedCursor

    public init(items: [Item], navigation: [Navigation], cursor: FeedCursor) {
        self.items = items
        self.navigation = navigation
        self.cursor = cursor
    }
}
