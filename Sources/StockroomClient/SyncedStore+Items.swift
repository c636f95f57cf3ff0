// Item writes: created, replaced and deleted through the offline queue, shown at once.

extension SyncedStore {
    /// Creates an item from `draft` under `id` (a new random id by default): it shows at once and
    /// is delivered when the server can be reached, with its idempotency key, exactly once.
    /// Throws only when the queue cannot be written.
    @discardableResult
    public func createItem(_ draft: Draft, id: ItemID = .random()) throws -> QueuedWrite {
        try enqueue(.createItem(id: id, draft: draft))
    }

    /// Replaces the fields of `item` with `draft`, if the server still holds `item.version` when
    /// the write arrives (else it lands in `failedWrites` as `412 preconditionFailed`, with the
    /// server's item and the draft). Shows at once.
    @discardableResult
    public func updateItem(_ item: Item, with draft: Draft) throws -> QueuedWrite {
        try updateItem(item.id, with: draft, ifVersion: item.version)
    }

    /// Replaces the fields of item `id` with `draft`, only if it is at `ifVersion` when one is
    /// given (nil: whatever the server holds). Shows at once.
    @discardableResult
    public func updateItem(_ id: ItemID, with draft: Draft, ifVersion: Int?) throws -> QueuedWrite {
        try enqueue(.updateItem(id: id, draft: draft, ifVersion: ifVersion))
    }

    /// Deletes `item`, if the server still holds `item.version` when the write arrives. Gone at once.
    @discardableResult
    public func deleteItem(_ item: Item) throws -> QueuedWrite {
        try deleteItem(item.id, ifVersion: item.version)
    }

    /// Deletes item `id`, only if it is at `ifVersion` when one is given. Gone at once.
    @discardableResult
    public func deleteItem(_ id: ItemID, ifVersion: Int?) throws -> QueuedWrite {
        try enqueue(.deleteItem(id: id, ifVersion: ifVersion))
    }
}
