import Foundation

// Order: `items` and `otherDevices` kept sorted one change at a time, not re-sorted on each.

extension SyncedStore {
    /// Where an item stands in `items`: by creation time, ties by arrival (placeholders of pending inserts last).
    struct SortKey: Comparable {
        var createdAt: Date
        var arrival: Int

        static func < (lhs: SortKey, rhs: SortKey) -> Bool {
            (lhs.createdAt, lhs.arrival) < (rhs.createdAt, rhs.arrival)
        }
    }

    func sortKey(_ item: Item) -> SortKey {
        indexArrivals()
        return SortKey(createdAt: item.createdAt, arrival: arrival[item.id] ?? .max)
    }

    /// Numbers item `id` as the next to arrive. The number goes into `arrival` when `items` next
    /// needs it: a catch-up that nobody reads in between appends ids to a list rather than growing
    /// a table keyed by id one change at a time. The list is bounded by the items' count (an item
    /// that leaves the filter and comes back arrives again).
    func noteArrival(of id: ItemID) {
        unindexedArrivals.append(id)
        nextArrival += 1
        if unindexedArrivals.count > 2 * (shownItems.count + unshown.count + 1_024) { indexArrivals() }
    }

    /// Moves the numbers of `unindexedArrivals` into `arrival`; a later arrival of an id replaces an earlier.
    func indexArrivals() {
        guard !unindexedArrivals.isEmpty else { return }
        arrival.reserveCapacity(arrival.count + unindexedArrivals.count)
        var number = nextArrival - unindexedArrivals.count
        for id in unindexedArrivals {
            arrival[id] = number
            number += 1
        }
        unindexedArrivals.removeAll()
    }

    /// Shows each change's item (nil: none) under its id: in one change of `itemsByID` (one
    /// notification for its observers, however many items a catch-up brings), then in `items`.
    func show(_ changes: [(id: ItemID, item: Item?)]) {
        guard !changes.isEmpty else { return }
        let position = cursor
        changeShownItems { shown in
            for change in changes {
                if change.item != nil { makeRoom(in: &shown, for: change.id, through: position) }
                shown[change.id] = change.item
            }
        }
        guard sortedItems != nil else { return }
        for change in changes { place(change.id, change.item) }
    }

    /// Moves item `id`, now `item` (nil: none), to where it goes in `items`. While `items` is read
    /// after each change (a list on screen), its order is kept by moving this one item: a binary
    /// search for where it was and where it goes; an update that keeps its place (every update:
    /// the creation time does not change) replaces it where it is. Changes nobody reads in between
    /// drop the order instead, and the next read sorts once.
    func place(_ id: ItemID, _ item: Item?) {
        guard var sorted = sortedItems else { return }
        guard itemsReadSinceChange else { return dropOrder() }
        itemsReadSinceChange = false
        sortedItems = nil  // Not shared while it changes: no copy of the array.
        defer { sortedItems = sorted }
        let oldKey = sortKeys[id]
        let newKey = item.map { sortKey($0) }
        var position: Int?
        if let oldKey { position = self.position(of: id, key: oldKey, in: sorted) }
        if let position, let item, oldKey == newKey {
            sorted[position] = item
            return
        }
        if let position {
            sorted.remove(at: position)
            sortedItemKeys.remove(at: position)
            sortKeys.removeValue(forKey: id)
        }
        if let item, let newKey {
            let at = insertionIndex(for: newKey)
            sorted.insert(item, at: at)
            sortedItemKeys.insert(newKey, at: at)
            sortKeys[id] = newKey
        }
    }

    /// Forgets the order of `items`: the next read sorts.
    func dropOrder() {
        sortedItems = nil
        sortKeys = [:]
        sortedItemKeys = []
    }

    /// The first position of `sortedItemKeys` whose key is not below `key`.
    private func insertionIndex(for key: SortKey) -> Int {
        var low = 0
        var high = sortedItemKeys.count
        while low < high {
            let middle = (low + high) / 2
            if sortedItemKeys[middle] < key { low = middle + 1 } else { high = middle }
        }
        return low
    }

    /// Where the item `id`, placed by `key`, stands (among the items of an equal key, by a scan).
    private func position(of id: ItemID, key: SortKey, in sorted: [Item]) -> Int? {
        var index = insertionIndex(for: key)
        while index < sorted.count, sortedItemKeys[index] == key {
            if sorted[index].id == id { return index }
            index += 1
        }
        return sorted.firstIndex { $0.id == id }
    }

    /// Every other device, most recently changed first (after a snapshot).
    func publishOtherDevices() {
        otherDevices = otherDevicesByID.values.sorted(by: Self.shownBefore)
    }

    /// Moves one device of `otherDevices` to where its new value goes; nil takes it out.
    func placeOtherDevice(_ id: ClientID, _ navigation: Navigation?) {
        var devices = otherDevices
        otherDevices = []  // Not shared while it changes: no copy of the array.
        if let index = devices.firstIndex(where: { $0.clientID == id }) { devices.remove(at: index) }
        if let navigation {
            var low = 0
            var high = devices.count
            while low < high {
                let middle = (low + high) / 2
                if Self.shownBefore(devices[middle], navigation) { low = middle + 1 } else { high = middle }
            }
            devices.insert(navigation, at: low)
        }
        otherDevices = devices
    }

    /// The order of `otherDevices`: the most recently changed first, ties by client id.
    static func shownBefore(_ lhs: Navigation, _ rhs: Navigation) -> Bool {
        (lhs.updatedAt ?? .distantPast, lhs.clientID.rawValue) > (rhs.updatedAt ?? .distantPast, rhs.clientID.rawValue)
    }
}
