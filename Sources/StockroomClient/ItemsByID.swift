/// The items a ``SyncedStore`` shows, each under its id: ``SyncedStore/itemsByID``.
///
/// Read it as a dictionary: `store.itemsByID[id]`, ``count``, ``keys``, ``values``, or iterate
/// its `(key, value)` pairs. The order of ``values`` (and of iteration) is no order an app should
/// rely on; ``SyncedStore/items`` is the items in creation order.
///
/// The items are kept in arrays of a fixed size, filled one after another, and a dictionary holds
/// each id's place in them. A dictionary of the items themselves would move every item each time
/// it grows, and touch a slot of the item's size for each of its buckets; one array would copy
/// every item each time it grows, and hold the old copy and the new at once. Here growing hashes
/// ids into a new table of ids and places, and a new item goes at the end of the last array.
public struct ItemsByID: Equatable, Sendable, Sequence {
    /// Each item's place in `items`.
    private var places: [ItemID: Int] = [:]
    /// The items, each under its own id, in no particular order (a removal moves the last into its place).
    private var items = Chunks()

    /// No items.
    public init() {}

    /// The items of `items`, each under its own id; of two with one id, the later.
    public init(_ items: some Sequence<Item>) {
        for item in items { upsert(item) }
    }

    /// How many items there are.
    public var count: Int { items.count }

    /// Whether there are none.
    public var isEmpty: Bool { items.count == 0 }

    /// Every item, in no particular order.
    public var values: FlattenSequence<[[Item]]> { (items.full + [items.tail]).joined() }

    /// Every item's id, in the order of ``values``.
    public var keys: LazyMapSequence<FlattenSequence<[[Item]]>, ItemID> { values.lazy.map(\.id) }

    /// How many items it can hold before its table of places grows.
    var capacity: Int { places.capacity }

    /// Whether it holds an item with id `id`.
    public func contains(_ id: ItemID) -> Bool { places[id] != nil }

    /// The item with id `id`, if there is one.
    public internal(set) subscript(id: ItemID) -> Item? {
        get { places[id].map { items[$0] } }
        set {
            if let newValue {
                precondition(newValue.id == id, "an item is kept under its own id")
                upsert(newValue)
            } else {
                remove(id)
            }
        }
    }

    /// Puts `item` under its id, in place of what was there.
    mutating func upsert(_ item: Item) {
        _ = upsert(item) { _ in true }
    }

    /// Puts `item` under its id if `replaces` says so of the item there (it is not asked when there
    /// is none): one look-up of the id either way. Whether it was put, and whether the id was new.
    mutating func upsert(_ item: Item, if replaces: (Item) -> Bool) -> (put: Bool, isNew: Bool) {
        Self.put(item, at: &places[item.id], in: &items, if: replaces)
    }

    private static func put(_ item: Item, at place: inout Int?, in items: inout Chunks, if replaces: (Item) -> Bool) -> (
        put: Bool, isNew: Bool
    ) {
        if let place {
            guard replaces(items[place]) else { return (false, false) }
            items[place] = item
            return (true, false)
        }
        place = items.count
        items.append(item)
        return (true, true)
    }

    /// Takes item `id` out; true when there was one. The last item moves into its place.
    @discardableResult
    mutating func remove(_ id: ItemID) -> Bool {
        guard let place = places.removeValue(forKey: id) else { return false }
        let last = items.removeLast()
        if place != items.count {
            items[place] = last
            places[last.id] = place
        }
        return true
    }

    /// Makes room for `capacity` items in all: its table of places grows to hold them (the chunks
    /// are made as items come).
    mutating func reserveCapacity(_ capacity: Int) {
        places.reserveCapacity(capacity)
    }

    /// Two are equal when they hold the same items under the same ids, in whatever order.
    public static func == (lhs: ItemsByID, rhs: ItemsByID) -> Bool {
        lhs.count == rhs.count && lhs.values.allSatisfy { rhs[$0.id] == $0 }
    }

    /// Each id and its item, in the order of ``values``.
    public func makeIterator() -> LazyMapSequence<FlattenSequence<[[Item]]>, (key: ItemID, value: Item)>.Iterator {
        values.lazy.map { (key: $0.id, value: $0) }.makeIterator()
    }

    /// Items in arrays of `size`: item `place` is item `place & mask` of chunk `place >> shift`, the
    /// chunks being `full`'s and then `tail`, the one new items are appended to. The first chunk
    /// grows as an array does; each later one is made at its whole size.
    private struct Chunks: Sendable {
        /// Items per chunk (a power of two): about 450 KB of them.
        static let shift = 12
        static let size = 1 << shift
        static let mask = size - 1

        var full: [[Item]] = []
        var tail: [Item] = []

        var count: Int { (full.count << Self.shift) + tail.count }

        subscript(place: Int) -> Item {
            get {
                let chunk = place >> Self.shift
                return chunk < full.count ? full[chunk][place & Self.mask] : tail[place & Self.mask]
            }
            set {
                let chunk = place >> Self.shift
                if chunk < full.count { full[chunk][place & Self.mask] = newValue } else { tail[place & Self.mask] = newValue }
            }
        }

        mutating func append(_ item: Item) {
            if tail.count == Self.size {
                var next: [Item] = []
                next.reserveCapacity(Self.size)
                swap(&next, &tail)
                full.append(next)
            }
            tail.append(item)
        }

        mutating func removeLast() -> Item {
            if tail.isEmpty { tail = full.removeLast() }
            return tail.removeLast()
        }
    }
}
