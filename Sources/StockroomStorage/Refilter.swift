import Foundation
import StockroomCore
import StockroomWire

/// A filter changed in place (`GET /v1/snapshot?filter=NEW&fromFilter=OLD&since=C`): what a client
/// holding the items that matched OLD at C needs to hold those matching NEW at `cursor`, without a
/// refetch. Applied (items upserted, removed ids dropped) and followed by `filter=NEW` from
/// `cursor`, it leaves the client exactly the items matching NEW.
public struct Refilter: Hashable, Sendable {
    /// The items matching NEW that the client does not hold as they are now: moved in, or changed
    /// since C. Items matching both filters and unchanged since C are not sent again.
    public var items: [Item]
    /// Ids the client may hold that do not match NEW: it drops those it has.
    public var removed: [ItemID]
    /// Where to follow `filter=NEW` from.
    public var cursor: FeedCursor

    public init(items: [Item], removed: [ItemID], cursor: FeedCursor) {
        self.items = items
        self.removed = removed
        self.cursor = cursor
    }

    /// The rules, once for every backend, over what one consistent read gave: every live item in
    /// creation order and the ids of the items with a change after C.
    ///
    /// A client at C holds exactly the items that matched OLD at C. An item unchanged since C is as
    /// it was then: held iff it matches OLD now. So the live items matching NEW are sent unless held
    /// and unchanged; the unchanged ones matching OLD and not NEW are removed; and every changed id
    /// that is not now a live item matching NEW is removed (the client may hold it).
    package static func build(liveItems: some Sequence<Item>, changed: Set<String>, from old: ItemFilter?, to new: ItemFilter?, cursor: FeedCursor)
        -> Refilter
    {
        var items: [Item] = []
        var removed: [ItemID] = []
        var sent: Set<String> = []
        for item in liveItems {
            let id = item.id.description
            let isChanged = changed.contains(id)
            let matchesOld = old?.matches(item) ?? true
            let matchesNew = new?.matches(item) ?? true
            if matchesNew {
                sent.insert(id)
                if isChanged || !matchesOld { items.append(item) }
            } else if !isChanged, matchesOld {
                removed.append(item.id)
            }
        }
        for id in changed.sorted() where !sent.contains(id) {
            if let itemID = ItemID(id) { removed.append(itemID) }
        }
        return Refilter(items: items, removed: removed, cursor: cursor)
    }
}
