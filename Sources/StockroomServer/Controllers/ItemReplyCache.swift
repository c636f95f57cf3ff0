import StockroomCore
import Synchronization

/// The answers of `GET /v1/items/{id}` last built, by item, so that answering the same item again
/// costs a look-up and a comparison instead of writing its JSON, its ETag and its headers anew.
///
/// An answer is used only for an item equal to the one it was built from, so a stale entry is
/// never served: a written item compares unequal (its version at least moved) and its answer is
/// built again and replaces the old one. Nothing needs forgetting. At most `capacity` answers are
/// kept; keeping one more empties the cache first.
final class ItemReplyCache: Sendable {
    private struct Entry {
        let item: Item
        let reply: Reply
    }

    private let entries = Mutex<[ItemID: Entry]>([:])
    let capacity: Int

    init(capacity: Int = 16_384) {
        self.capacity = capacity
    }

    /// The answer for `item`: the one kept if it was built from an equal item, else `build(item)`, kept.
    func reply(for item: Item, build: (Item) -> Reply) -> Reply {
        if let kept = entries.withLock({ $0[item.id] }), kept.item == item { return kept.reply }
        let reply = build(item)
        guard capacity > 0 else { return reply }
        entries.withLock { entries in
            if entries.count >= capacity, entries[item.id] == nil { entries.removeAll(keepingCapacity: true) }
            entries[item.id] = Entry(item: item, reply: reply)
        }
        return reply
    }

    /// How many answers are kept now.
    var count: Int { entries.withLock { $0.count } }
}
