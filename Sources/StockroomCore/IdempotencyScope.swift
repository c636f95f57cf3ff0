/// What an Idempotency-Key is unique within, beside its user: item writes, or one client's commands.
public enum IdempotencyScope: Hashable, Sendable {
    /// `POST`, `PUT` and `DELETE` on `/v1/items`.
    case items
    /// The commands of one client (device).
    case client(ClientID)

    /// `items` or `client:<clientID>`: how the store keeps it.
    public var rawValue: String {
        switch self {
        case .items: "items"
        case .client(let id): "client:\(id.rawValue)"
        }
    }

    /// Parses `rawValue`; nil when malformed.
    public init?(rawValue: String) {
        if rawValue == "items" {
            self = .items
        } else if rawValue.hasPrefix("client:"), let id = ClientID(String(rawValue.dropFirst("client:".count))) {
            self = .client(id)
        } else {
            return nil
        }
    }
}
