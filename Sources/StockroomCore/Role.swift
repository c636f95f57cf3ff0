/// What a bearer token may do.
public enum Role: String, Hashable, Sendable, CaseIterable, Comparable {
    /// Reads items; drives its own navigation, but writes no item.
    case viewer
    /// Everything on items.
    case editor
    /// Editor, plus token management.
    case admin

    private var rank: Int {
        switch self {
        case .viewer: 0
        case .editor: 1
        case .admin: 2
        }
    }

    public static func < (lhs: Role, rhs: Role) -> Bool { lhs.rank < rhs.rank }
}
