// Mirroring the server: snapshots, changes and presence as the feed delivers them.

extension SyncedStore {
    /// Applies one feed event: what the store does with each event of its own feed, open to apps
    /// that follow the feed themselves.
    public func apply(_ event: FeedEvent) {
        switch event {
        case .snapshot(let snapshot):
            load(snapshot, keepingNewer: true)
            loadPresence()
        case .resync(let snapshot):
            resyncCount += 1
            load(snapshot, keepingNewer: false)
            loadPresence()
        case .change(let change):
            apply(change)
        case .progress(let position):
            cursor = position
        case .connected(let head):
            catchUpHead = head
            connection = .online
            deliveryAttempt = 0
            wakeup.fire()
        case .disconnected(let error, _):
            connection = .offline(reason: Self.describe(error))
        }
    }

    /// Reads the devices' presence once the snapshot is in; a presence change the feed brought
    /// meanwhile is newer and stays.
    func loadPresence() {
        let client = self.client
        tasks.add(
            Task { [weak self] in
                guard let known = try? await client.devicePresence(), let self, !Task.isCancelled else { return }
                for (id, value) in known where self.presence[id] == nil { self.presence[id] = value }
            })
    }

    /// Replaces the confirmed state with a snapshot, keeping pending commands on top.
    ///
    /// A first snapshot may have been read before answers the store already applied (a command
    /// answered while the snapshot was on its way): with `keepingNewer`, a newer version the store
    /// holds, or a deletion it knows of, stays, so nothing shows older than it was; the feed from the
    /// snapshot's cursor brings the rest. After a `410` the snapshot replaces everything: the database
    /// may have been restored, where versions start again.
    func load(_ snapshot: Snapshot, keepingNewer: Bool) {
        var items = ItemsByID(snapshot.items)
        var ownNavigation = snapshot.navigation.first { $0.clientID == clientID } ?? .unwritten(clientID: clientID)
        var devices = Dictionary(
            snapshot.navigation.filter { $0.clientID != clientID }.map { ($0.clientID, $0) }, uniquingKeysWith: { $1 })
        if keepingNewer {
            for (id, known) in allConfirmedItems() where (items[id]?.version ?? .max) < known.version { items[id] = known }
            for id in tombstones { items.remove(id) }
            if confirmedNavigation.version > ownNavigation.version { ownNavigation = confirmedNavigation }
            for (id, known) in otherDevicesByID where (devices[id]?.version ?? -1) < known.version { devices[id] = known }
        } else {
            tombstones = []
        }
        departed = []
        arrival = Dictionary(snapshot.items.enumerated().map { ($1.id, $0) }, uniquingKeysWith: { $1 })
        unindexedArrivals = []
        nextArrival = snapshot.items.count
        confirmedNavigation = ownNavigation
        otherDevicesByID = devices
        publishOtherDevices()
        cursor = snapshot.cursor
        itemsByID = items
        dropOrder()
        confirmedBeneath = [:]
        unshown = [:]
        rebase()
        if !isLoaded {
            isLoaded = true
            let waiting = loadWaiters
            loadWaiters = []
            for waiter in waiting { waiter.continuation.resume() }
        }
    }

    /// Applies feed events in order, as ``apply(_:)`` applies each, and shows the result together:
    /// one rebase of the pending writes, one change of ``cursor``, and ``itemsByID`` changed for
    /// observers once for each run of item upserts and once for the other changes, not per change.
    /// What the store does with each hand-over of its own feed (``ChangeFeed/Iterator/nextBatch(isolation:)``),
    /// so that a catch-up of many changes is not shown one change at a time.
    public func apply(contentsOf events: some Sequence<FeedEvent>) {
        // Called from another module the generic body is not specialized: each event would go through
        // the sequence's witness table. The feed's batches (and arrays) take the specialized one.
        if let batch = events as? ArraySlice<FeedEvent> { return apply(batch: batch) }
        if let array = events as? [FeedEvent] { return apply(batch: array[...]) }
        apply(batch: ArraySlice(events))
    }

    private func apply(batch events: ArraySlice<FeedEvent>) {
        var rebaseDue = false
        var position: FeedCursor?
        // Item upserts while the store shows the server's items alone, taken together (`showDirectly`).
        var direct: [Item] = []
        for event in events {
            guard case .change(let change) = event else {
                // Anything else applies on the state shown so far.
                showDirectly(&direct, through: position)
                settle(rebaseDue: &rebaseDue, position: &position)
                apply(event)
                continue
            }
            position = change.cursor
            if !rebaseDue, let item = directItem(change) {
                direct.append(item)
                continue
            }
            showDirectly(&direct, through: position)
            if absorb(change, rebaseDue: &rebaseDue) { rebaseDue = true }
        }
        showDirectly(&direct, through: position)
        settle(rebaseDue: &rebaseDue, position: &position)
    }

    /// The item of an upsert that can go straight into `itemsByID` (`showDirectly`): what shows is
    /// the server's alone (no write pending, nothing overlaid, nothing waiting to show). Nil else.
    private func directItem(_ change: Change) -> Item? {
        guard change.entity == .item, change.operation == .upsert,
            optimistic.isEmpty, unshown.isEmpty, confirmedBeneath.isEmpty, replayedOverlay.isEmpty
        else { return nil }
        return change.item
    }

    /// Shows item upserts taken while the store showed the server's items alone: as `absorb` and a
    /// rebase would (a newer version replaces, a deleted item stays gone), each straight into
    /// `itemsByID` with one look-up (a full one grown by `makeRoom`), and observers told once if anything changed.
    private func showDirectly(_ items: inout [Item], through position: FeedCursor?) {
        guard !items.isEmpty else { return }
        defer { items.removeAll(keepingCapacity: true) }
        var arrived: [ItemID] = []
        var placed: [Item] = []
        let keepsOrder = sortedItems != nil
        changeShownItemsIfAny { shown in
            var changed = false
            for item in items {
                if !departed.isEmpty { departed.remove(item.id) }
                guard tombstones.isEmpty || !tombstones.contains(item.id) else { continue }
                makeRoom(in: &shown, for: item.id, through: position)
                let (put, isNew) = shown.upsert(item) { Self.supersedes(item, $0) }
                guard put else { continue }
                changed = true
                if isNew { arrived.append(item.id) }
                if keepsOrder { placed.append(item) }
            }
            return changed
        }
        for id in arrived { noteArrival(of: id) }
        for item in placed { place(item.id, item) }
    }

    /// Whether the server's `item` replaces `known`, the store's item of the same id: the rule by
    /// which the store takes the server's items, here and in `confirm`.
    static func supersedes(_ item: Item, _ known: Item) -> Bool { known.version < item.version }

    /// Puts `item` in `slot` if it is newer than what the slot holds (`isNew`: it held nothing).
    static func take(_ item: Item, into slot: inout Item?, isNew: inout Bool) -> Bool {
        if let known = slot {
            guard supersedes(item, known) else { return false }
        } else {
            isNew = true
        }
        slot = item
        return true
    }

    /// Shows what the changes absorbed so far changed, and their cursor.
    private func settle(rebaseDue: inout Bool, position: inout FeedCursor?) {
        if let next = position { cursor = next }
        position = nil
        if rebaseDue { rebase() }
        rebaseDue = false
    }

    func apply(_ change: Change) {
        cursor = change.cursor
        // Straight in, as a batch's upserts go (`showDirectly`), not through `unshown` and a rebase.
        if let item = directItem(change) {
            var direct = [item]
            return showDirectly(&direct, through: change.cursor)
        }
        var rebaseDue = false
        if absorb(change, rebaseDue: &rebaseDue) { rebase() }
    }

    /// Takes one change into the confirmed state; true when the state shown needs a rebase for it.
    /// `rebaseDue` says that changes before this one, in a batch, put theirs off; a change that
    /// must be taken on the state they make runs it first.
    private func absorb(_ change: Change, rebaseDue: inout Bool) -> Bool {
        // Whether the confirmed state the pending commands replay on changed.
        var changed = false
        switch (change.entity, change.operation) {
        case (.item, .upsert):
            if let item = change.item {
                if !departed.isEmpty { departed.remove(item.id) }
                changed = confirm(item)
            }
        case (.item, .delete):
            guard let id = ItemID(change.id) else { break }
            // An item that left the store's filter still exists: it may come back in.
            changed = change.move == .out ? confirmDeparture(of: id) : confirmDeletion(of: id)
        case (.navigation, .upsert):
            if let navigation = change.navigation { changed = confirm(navigation) }
        case (.navigation, .delete):
            if let id = ClientID(change.id), id != clientID, otherDevicesByID.removeValue(forKey: id) != nil {
                placeOtherDevice(id, nil)
                changed = true
            }
            if let id = ClientID(change.id) { presence.removeValue(forKey: id) }
        case (.presence, .upsert):
            if let value = change.presence { presence[value.clientID] = value }
        case (.presence, .delete):
            break
        }
        // An echo of one of this device's pending writes: the server applied it. A command's own
        // navigation is the last entry of its transaction; until that arrives the command still
        // counts for the navigation, decided on the items it saw before (so that its own item echo
        // cannot turn its save into a conflict), and its item effect is the server's now. An item
        // write (no device in its origin) is its one entry: the server's item stands for it.
        if let key = change.origin.idempotencyKey, change.origin.clientID == clientID || change.origin.clientID == nil,
            let index = optimistic.firstIndex(where: { $0.queued.idempotencyKey == key })
        {
            // The items the command is frozen on are the last replay's: one on every change before it.
            if rebaseDue {
                rebase()
                rebaseDue = false
            }
            if optimistic[index].queued.command == nil || (change.entity == .navigation && change.id == clientID.rawValue) {
                optimistic.remove(at: index)
            } else if optimistic[index].frozen == nil {
                optimistic[index].frozen = optimistic[index].lookups
            }
            // What the state shown predicted: the rebase may wait (`rebaseSoon`).
            rebaseSoon()
            return false
        }
        // Whatever changed shows, pending commands or not, and the state the next command is decided
        // on (`replayedState`) follows it. (A shortcut for the case of nothing pending would leave that
        // state behind: a repair by another device's delete would show, and the next command would
        // be decided on the path from before it.) A change that confirms nothing new (the echo of a
        // command already answered, a presence) changes neither.
        return changed
    }
}
