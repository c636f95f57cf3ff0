/// Whether an entity was written or deleted (`op` of a `Change`).
public enum ChangeOp: String, Hashable, Sendable, CaseIterable {
    /// Created or replaced.
    case upsert
    /// Deleted: an item's tombstone, or a device removed after `limits.deviceRetentionDays` unseen.
    case delete
}
