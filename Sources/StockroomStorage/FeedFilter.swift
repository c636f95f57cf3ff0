import Foundation
import StockroomCore

/// Which changes a feed subscriber may see: items for everyone, navigation and presence for their owner only.
public struct FeedFilter: Hashable, Sendable {
    /// The subscriber's user.
    public var user: UserID
    /// The topics it follows.
    public var topics: Set<ChangeEntity>

    /// Creates a filter.
    public init(user: UserID, topics: Set<ChangeEntity>) {
        self.user = user
        self.topics = topics
    }

    /// Whether a change of `entity` owned by `owner` passes the filter.
    public func sees(entity: ChangeEntity, owner: UserID?) -> Bool {
        switch entity {
        case .item: topics.contains(.item)
        case .navigation: topics.contains(.navigation) && owner == user
        case .presence: topics.contains(.presence) && owner == user
        }
    }
}
