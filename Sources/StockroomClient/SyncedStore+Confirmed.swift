// The server's state as the store last heard it: items and devices taken when newer, deletions
// and departures from the filter remembered.

extension SyncedStore {
    /// Takes the server's item if it is newer than what the store holds; true when it changed.
    @discardableResult
    func confirm(_ item: Item) -> Bool {
        guard tombstones.isEmpty || !tombstones.contains(item.id) else { return false }
        var known = confirmedItem(item.id)
        var isNew = false
        guard Self.take(item, into: &known, isNew: &isNew) else { return false }
        if isNew { noteArrival(of: item.id) }
        unshown[item.id] = .some(item)
        return true
    }

    /// The server's item `id` as last heard (nil: none), whether or not a pending write overlays it.
    func confirmedItem(_ id: ItemID) -> Item? {
        if !unshown.isEmpty, let changed = unshown[id] { return changed }
        if !confirmedBeneath.isEmpty, let beneath = confirmedBeneath[id] { return beneath }
        return shownItems[id]
    }

    /// Every item of the server's as last heard (built whole: for a snapshot's load).
    func allConfirmedItems() -> ItemsByID {
        var items = shownItems
        for (id, item) in confirmedBeneath { items[id] = item }
        for (id, item) in unshown { items[id] = item }
        return items
    }

    /// Takes item `id` out of the server's items as the store knows them; true when it held it.
    private func forget(_ id: ItemID) -> Bool {
        let held = confirmedItem(id) != nil
        unshown[id] = .some(nil)
        return held
    }

    /// Drops an item the store no longer follows (it left the filter): not a deletion, so a later
    /// move back in shows it again. True when the store held the item.
    @discardableResult
    func confirmDeparture(of id: ItemID) -> Bool {
        departed.insert(id)
        return forget(id)
    }

    /// True when the store held the item.
    @discardableResult
    func confirmDeletion(of id: ItemID) -> Bool {
        tombstones.insert(id)
        return forget(id)
    }

    /// Takes the server's navigation of a device if it is newer than what the store holds; true
    /// when it changed.
    @discardableResult
    func confirm(_ navigation: Navigation) -> Bool {
        if navigation.clientID == clientID {
            guard navigation.version >= confirmedNavigation.version, navigation != confirmedNavigation else { return false }
            confirmedNavigation = navigation
            return true
        }
        guard (otherDevicesByID[navigation.clientID]?.version ?? -1) < navigation.version else { return false }
        otherDevicesByID[navigation.clientID] = navigation
        placeOtherDevice(navigation.clientID, navigation)
        return true
    }
}
