/// Whether an entity was written or deleted (`op` of a `Change`).
public enum ChangeOp: String, Hashable, Sendable, CaseIterable {
    /// Created or replaced.
    case upsert
    /// Deleted: an item's tombstone, or a device removed after `limits.deviceRetentionDays` unseen.
    case delete
}

/// How an item change crossed a filtered feed's filter (`move` of a `Change`): the item matches
/// now and did not before (`in`, sent as an upsert of the whole item), or matched and does not
/// now (`out`, sent as a delete). Changes of an unfiltered feed have none.
public enum ChangeMove: String, Hashable, Sendable, CaseIterable {
    case `in`
    case out
}
