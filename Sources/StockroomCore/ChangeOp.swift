/// Whether an entity was written or deleted (`op` of a `Change`).
public enum ChangeOp: String, Hashable, Sendable, Codable, CaseIterable {
    /// Created or replaced.
    case upsert
    /// Deleted (items only: a tombstone).
    case delete
}
