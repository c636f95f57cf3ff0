import Foundation

/// Whether an item is in stock, and how many or whether it is back-ordered.
public enum Status: Hashable, Sendable {
    case inStock(quantity: Int)
    case outOfStock(isOnBackOrder: Bool)
}
