/// Which entities a feed carries (`topics=` of the feed routes).
public enum Topic: String, Hashable, Sendable, CaseIterable {
    /// Item upserts and deletes (every token sees them).
    case items
    /// Navigation changes of the token's own user.
    case navigation
    /// Presence changes of the token's own user's devices.
    case presence

    /// The kind of change entry the topic carries.
    public var entity: ChangeEntity {
        switch self {
        case .items: .item
        case .navigation: .navigation
        case .presence: .presence
        }
    }
}
