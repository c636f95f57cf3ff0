import Foundation

/// What a client needs to follow another item filter without a refetch (``StockroomClient/refilter(from:to:since:)``).
public struct FilterDelta: Hashable, Sendable, Decodable {
    /// Items matching the new filter that the client does not hold as they are now.
    public var items: [Item]
    /// Ids the client may hold that do not match the new filter.
    public var removed: [ItemID]
    /// Where to follow the new filter from.
    public var cursor: FeedCursor
}
