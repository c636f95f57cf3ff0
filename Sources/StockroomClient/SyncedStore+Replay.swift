// Optimistic replay: pending writes applied on top of the confirmed state: commands with
// `Transition.decide`, item writes as the server applies them.

extension SyncedStore {
    /// A pending write as applied on top of the confirmed state.
    struct Optimistic {
        let queued: QueuedWrite
        /// The id an insert shows under until the server's item arrives.
        let placeholderID = ItemID.random()
        /// The items the last replay decided on.
        var lookups: [ItemID: Item] = [:]
        /// Set at the first echo of the command: the items it was decided on, kept from then on.
        var frozen: [ItemID: Item]?
        /// What the last replay decided, nil when the command does not apply locally.
        var effect: ItemEffect?

        init(_ queued: QueuedWrite) { self.queued = queued }
    }

    /// Replays every pending command on the confirmed state and shows the result.
    func rebase() {
        deferredRebases = 0
        var state = confirmedNavigation.state
        var overlay: [ItemID: Item?] = [:]
        for index in optimistic.indices { replay(at: index, state: &state, overlay: &overlay) }
        publish(state: state, overlay: overlay)
    }

    /// Applies pending command `index` to `state`, its item effect to `overlay` (nil for a delete).
    /// A command the local state refuses changes nothing here; the server decides.
    func replay(at index: Int, state: inout NavigationState, overlay: inout [ItemID: Item?]) {
        replayCount += 1
        let entry = optimistic[index]
        guard case .command(let command) = entry.queued.write else {
            return replayItemWrite(entry.queued, overlay: &overlay)
        }
        let lookups: [ItemID: Item]
        if let frozen = entry.frozen {
            lookups = frozen
        } else {
            var found: [ItemID: Item] = [:]
            for id in command.itemsToLookUp(in: state) {
                if let item = shownItem(id, overlay: overlay) { found[id] = item }
            }
            lookups = found
            optimistic[index].lookups = found
        }
        var restoreSource: NavigationState?
        if case .restore(let source) = command {
            restoreSource = source == clientID ? state : otherDevicesByID[source]?.state
        }
        guard let transition = try? Transition.decide(command, on: state, items: lookups, restoreSource: restoreSource) else {
            optimistic[index].effect = nil
            return
        }
        state = transition.state
        optimistic[index].effect = transition.effect
        guard entry.frozen == nil else { return }
        let at = entry.queued.enqueuedAt
        switch transition.effect {
        case .none:
            break
        case .insert(let fields):
            overlay[entry.placeholderID] = Item(
                id: entry.placeholderID, name: fields.name, color: fields.color, status: fields.status, version: 1, createdAt: at,
                updatedAt: at)
        case .update(let id, let fields, let expectedVersion):
            overlay[id] = Item(
                id: id, name: fields.name, color: fields.color, status: fields.status, version: expectedVersion + 1,
                createdAt: lookups[id]?.createdAt ?? at, updatedAt: at)
        case .delete(let id):
            overlay[id] = .some(nil)
        }
    }

    /// Applies a pending item write to `overlay` as the server would: a create of an id the store
    /// does not know; an update or delete of an item it shows, at `ifVersion` when one is given; a
    /// draft only if it is valid (the name trimmed).
    /// Anything else the server decides (a refusal lands in `failedWrites`).
    func replayItemWrite(_ queued: QueuedWrite, overlay: inout [ItemID: Item?]) {
        let at = queued.enqueuedAt
        switch queued.write {
        case .command:
            break
        case .createItem(let id, let draft):
            guard overlay[id] == nil, confirmedItem(id) == nil, !tombstones.contains(id), let fields = try? ValidDraft(draft) else { return }
            overlay[id] = Item(id: id, name: fields.name, color: fields.color, status: fields.status, version: 1, createdAt: at, updatedAt: at)
        case .updateItem(let id, let draft, let ifVersion):
            guard let base = shownItem(id, overlay: overlay), ifVersion == nil || ifVersion == base.version, let fields = try? ValidDraft(draft) else { return }
            overlay[id] = Item(
                id: id, name: fields.name, color: fields.color, status: fields.status, version: base.version + 1,
                createdAt: base.createdAt, updatedAt: at)
        case .deleteItem(let id, let ifVersion):
            guard let base = shownItem(id, overlay: overlay), ifVersion == nil || ifVersion == base.version else { return }
            overlay[id] = .some(nil)
        }
    }

    /// Item `id` as replayed so far: `overlay`'s when a pending write set it (nil for a delete),
    /// else the server's.
    func shownItem(_ id: ItemID, overlay: [ItemID: Item?]) -> Item? {
        if !overlay.isEmpty, let overlaid = overlay[id] { overlaid } else { confirmedItem(id) }
    }

    /// A rebase after the server confirmed one of this device's commands (its answer, or the feed's
    /// echo of it), which the state shown already predicts: put off until as many confirmations
    /// have come as commands are pending (or none are), or until delivery pauses (`flushRebase`).
    /// Each rebase replays the pending commands, so draining N queued commands replays O(N)
    /// commands in all, not one replay of all of them per answer.
    func rebaseSoon() {
        deferredRebases += 1
        if deferredRebases >= optimistic.count { rebase() }
    }

    /// Runs a rebase put off by `rebaseSoon`, if one is.
    func flushRebase() {
        if deferredRebases > 0 { rebase() }
    }

    /// Shows the replayed state: the confirmed items with `overlay` on top, and the navigation.
    func publish(state: NavigationState, overlay: [ItemID: Item?]) {
        replayedState = state
        replayedOverlay = overlay
        let shown = Navigation(
            clientID: clientID, state: state, version: confirmedNavigation.version, updatedAt: confirmedNavigation.updatedAt)
        if navigation != shown { navigation = shown }
        guard !unshown.isEmpty || !confirmedBeneath.isEmpty || !overlay.isEmpty else { return }
        // Each id changed underneath, overlaid before or overlaid now, once: what it shows, and
        // for those overlaid now, the server's value beneath.
        var changes: [(id: ItemID, item: Item?)] = []
        var beneath: [ItemID: Item?] = [:]
        if overlay.isEmpty && confirmedBeneath.isEmpty {
            // Nothing overlaid, before or now: what shows is the server's, and each unshown item is
            // newer than it (`confirm`), so only a removal needs a look at what shows.
            changes.reserveCapacity(unshown.count)
            for (id, item) in unshown where item != nil || shownItems.contains(id) { changes.append((id, item)) }
        } else {
            let showing = shownItems
            func consider(_ id: ItemID) {
                let confirmed = confirmedItem(id)
                var item = confirmed
                if !overlay.isEmpty, let overlaid = overlay[id] {
                    item = overlaid
                    beneath[id] = .some(confirmed)
                }
                if showing[id] != item { changes.append((id, item)) }
            }
            for id in unshown.keys { consider(id) }
            for id in confirmedBeneath.keys where unshown[id] == nil { consider(id) }
            for id in overlay.keys where unshown[id] == nil && confirmedBeneath[id] == nil { consider(id) }
        }
        confirmedBeneath = beneath
        // A batch's worth of room is kept, not a whole catch-up's.
        unshown.removeAll(keepingCapacity: unshown.capacity <= 4_096)
        show(changes)
    }
}
