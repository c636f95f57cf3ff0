/// The kind of entity a change is about (`entity` of a `Change`).
public enum ChangeEntity: String, Hashable, Sendable, Codable, CaseIterable {
    /// An item.
    case item
    /// One client's navigation.
    case navigation
}

/// Whether an entity was written or deleted (`op` of a `Change`).
public enum ChangeOp: String, Hashable, Sendable, Codable, CaseIterable {
    /// Created or replaced.
    case upsert
    /// Deleted (items only: a tombstone).
    case delete
}
