import StockroomCore
import StockroomStorage
import Synchronization

/// Live items as `AppDatabase.item(_:)` last read them, so that reading a known item again costs
/// no read transaction. Only this process writes items (every item write is a commit of its writer
/// connection, and each appends a change entry for the item), so the commits say what to forget:
/// `ChangeObserver` calls `forget` with the items a commit changed after the commit and before
/// any of its writers is answered, so a read that starts after an answer never finds the item as
/// it was before that write.
///
/// A read that began before such a commit may still hold the item as it was: it keeps what it
/// read under the generation it saw before reading, and every `forget` moves the generation, so
/// such a read keeps nothing. At most `capacity` items are kept; a read that would keep one more
/// empties the cache first.
final class ItemCache: Sendable {
    private struct State {
        var generation: UInt64 = 0
        var items: [ItemID: Item] = [:]
    }

    private let state = Mutex(State())
    let capacity: Int

    init(capacity: Int = 16_384) {
        self.capacity = capacity
    }

    /// The item kept for `id`, or the generation a read of it must name to `keep` what it reads.
    func item(_ id: ItemID) -> Lookup {
        state.withLock { state in
            if let item = state.items[id] { return .hit(item) }
            return .miss(generation: state.generation)
        }
    }

    enum Lookup {
        case hit(Item)
        case miss(generation: UInt64)
    }

    /// Keeps `item`, read after `item(_:)` answered `.miss(generation)`, unless a commit has
    /// changed items since.
    func keep(_ item: Item, generation: UInt64) {
        state.withLock { state in
            guard state.generation == generation, capacity > 0 else { return }
            if state.items.count >= capacity { state.items.removeAll(keepingCapacity: true) }
            state.items[item.id] = item
        }
    }

    /// Forgets the items a commit changed (its item entries); nil forgets every item (a commit
    /// whose entries could not be read, or were more than the hub keeps). A commit that changed no
    /// item leaves the cache and its generation as they are.
    func forget(_ entries: [ChangeEntry]?) {
        guard let entries else {
            state.withLock { state in
                state.generation &+= 1
                state.items.removeAll()
            }
            return
        }
        guard entries.contains(where: { $0.entity == .item }) else { return }
        state.withLock { state in
            state.generation &+= 1
            guard !state.items.isEmpty else { return }
            for entry in entries where entry.entity == .item {
                if let id = ItemID(entry.id) { state.items[id] = nil }
            }
        }
    }

    /// How many items are kept now.
    var count: Int { state.withLock { $0.items.count } }
}
