import Foundation
import StockroomCore

/// Which changes a feed subscriber may see: items for everyone, navigation and presence for their
/// owner only, and of the items, with an item filter (`filter=`), those that match it now or did
/// before the change.
public struct FeedFilter: Hashable, Sendable {
    /// The subscriber's user.
    public var user: UserID
    /// The topics it follows.
    public var topics: Set<ChangeEntity> {
        get { Set(ChangeEntity.allCases.filter(follows)) }
        set { followed = Self.mask(of: newValue) }
    }
    /// The items it follows; nil for every item.
    public var items: ItemFilter?
    /// The topics, one bit each: every entry a feed reads or wakes for is checked against them,
    /// and a set look-up hashes.
    private var followed: UInt8

    /// Creates a filter.
    public init(user: UserID, topics: Set<ChangeEntity>, items: ItemFilter? = nil) {
        self.user = user
        self.items = items
        followed = Self.mask(of: topics)
    }

    /// Whether it follows `entity`'s topic.
    public func follows(_ entity: ChangeEntity) -> Bool {
        followed & Self.bit(entity) != 0
    }

    private static func bit(_ entity: ChangeEntity) -> UInt8 {
        switch entity {
        case .item: 1
        case .navigation: 2
        case .presence: 4
        }
    }

    private static func mask(of topics: Set<ChangeEntity>) -> UInt8 {
        topics.reduce(0) { $0 | bit($1) }
    }

    /// Whether a change of `entity` owned by `owner` passes the topics (an item change may still
    /// be left out by the item filter: `shown(_:)`).
    public func sees(entity: ChangeEntity, owner: UserID?) -> Bool {
        follows(entity) && (entity == .item || owner == user)
    }

    /// The entry as this subscriber receives it: nil when it is not for it; under an item filter,
    /// an item change that matched before or matches now, as a move when it crossed the filter:
    /// - matched and matches: the entry as it is;
    /// - did not match (or did not exist) and matches now: an upsert, `move: in` when the item existed;
    /// - matched and does not now: a delete, `move: out` (no value) when the item still exists;
    /// - neither: nil.
    /// An entry that does not record what the item was before (`ItemBefore.unknown`) counts as
    /// matched before: a subscriber that may hold the item is told to drop it.
    public func shown(_ entry: ChangeEntry) -> ChangeEntry? {
        guard sees(entity: entry.entity, owner: entry.owner) else { return nil }
        guard let items, entry.entity == .item else { return entry }
        let decoded = entry.decodedItems
        let before = decoded.beforeUnknown || (decoded.before.map(items.matches) ?? false)
        let after = decoded.after.map(items.matches) ?? false
        switch (before, after) {
        case (true, true): return entry
        case (false, false): return nil
        case (false, true): return decoded.before == nil ? entry : entry.moved(.in)
        case (true, false): return entry.op == .delete ? entry : entry.moved(.out)
        }
    }
}
