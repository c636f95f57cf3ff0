/// Which items a list returns, by status (`status=` of `GET /v1/items`).
public enum StatusFilter: String, Hashable, Sendable, CaseIterable {
    /// Items in stock.
    case inStock
    /// Items out of stock, back-ordered or not.
    case outOfStock
}
