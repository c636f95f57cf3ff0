/// Why the domain refused a command or a value; each case has a stable code.
public enum DomainError: Error, Hashable, Sendable {
    /// A value is well-formed but breaks a rule.
    case validationFailed(field: String?, message: String)
    /// The command does not fit the current navigation state.
    case invalidTransition(String)
    /// A named item does not exist (or was deleted).
    case itemNotFound(ItemID)
    /// A named client does not exist for this user.
    case clientNotFound(ClientID)
    /// The item an edit draft belongs to was deleted.
    case itemDeleted(ItemID)
    /// The item changed since the edit draft was opened.
    case conflict(current: Item)

    /// The stable machine code of the error.
    public var code: String {
        switch self {
        case .validationFailed: "validationFailed"
        case .invalidTransition: "invalidTransition"
        case .itemNotFound, .clientNotFound: "notFound"
        case .itemDeleted: "itemDeleted"
        case .conflict: "conflict"
        }
    }

    /// A human-readable explanation.
    public var message: String {
        switch self {
        case .validationFailed(_, let message): message
        case .invalidTransition(let message): message
        case .itemNotFound(let id): "no item \(id)"
        case .clientNotFound(let id): "no client \(id)"
        case .itemDeleted(let id): "item \(id) was deleted; the draft is still open"
        case .conflict(let current): "item \(current.id) changed since the draft was opened (now version \(current.version))"
        }
    }
}
