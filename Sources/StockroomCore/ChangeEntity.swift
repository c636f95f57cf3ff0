/// The kind of entity a change is about (`entity` of a `Change`).
public enum ChangeEntity: String, Hashable, Sendable, CaseIterable {
    /// An item.
    case item
    /// One client's navigation.
    case navigation
    /// Whether one client (device) is open now, and when it was last seen.
    case presence
}
