import StockroomCore
import StockroomStorage

/// The drafts and origins the store and contract tests share.
public enum Sample {
    public static let keyboard = Draft(name: "Keyboard", color: nil, status: .inStock(quantity: 100))
    public static let mouse = Draft(
        name: "Mouse", color: Color(name: "Graphite", red: 0.2, green: 0.2, blue: 0.25), status: .outOfStock(isOnBackOrder: true))
    /// What the user types in the episode of the brief.
    public static let bluetooth = Draft(name: "Bluetooth Keyboard", color: nil, status: .inStock(quantity: 1000))
    /// An invalid draft: a whitespace-only name.
    public static let blankName = Draft(name: "   ", color: nil, status: .inStock(quantity: 1))
    public static let blankNameError = DomainError.validationFailed(field: "name", message: "name must not be empty")

    public static let erin = Origin(user: "erin")
    public static func erin(_ clientID: ClientID, key: String? = nil) -> Origin { Origin(user: "erin", clientID: clientID, idempotencyKey: key) }
    public static let otto = Origin(user: "otto")
    public static func otto(_ clientID: ClientID, key: String? = nil) -> Origin { Origin(user: "otto", clientID: clientID, idempotencyKey: key) }
}
