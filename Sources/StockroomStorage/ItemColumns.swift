import StockroomCore

/// An item's editable fields as both stores' `items` tables keep them, a column each: the one
/// mapping between the domain (`ValidDraft`, `Item`) and a row, for SQLite and PostgreSQL alike.
/// An in-stock item has a quantity and no back-order flag; an out-of-stock one the reverse; a
/// colour is stored only whole.
public struct ItemColumns: Hashable, Sendable {
    public var name: String
    public var colorName: String?
    public var colorRed: Double?
    public var colorGreen: Double?
    public var colorBlue: Double?
    public var inStock: Bool
    public var quantity: Int?
    public var isOnBackOrder: Bool?

    @inlinable
    public init(
        name: String, colorName: String?, colorRed: Double?, colorGreen: Double?, colorBlue: Double?, inStock: Bool, quantity: Int?,
        isOnBackOrder: Bool?
    ) {
        self.name = name
        self.colorName = colorName
        self.colorRed = colorRed
        self.colorGreen = colorGreen
        self.colorBlue = colorBlue
        self.inStock = inStock
        self.quantity = quantity
        self.isOnBackOrder = isOnBackOrder
    }

    /// The columns of validated fields.
    @inlinable
    public init(_ fields: ValidDraft) {
        name = fields.name
        colorName = fields.color?.name
        colorRed = fields.color?.red
        colorGreen = fields.color?.green
        colorBlue = fields.color?.blue
        switch fields.status {
        case .inStock(let count):
            inStock = true
            quantity = count
            isOnBackOrder = nil
        case .outOfStock(let backOrdered):
            inStock = false
            quantity = nil
            isOnBackOrder = backOrdered
        }
    }

    /// The name as the list's `q` matches it (`search_name`).
    @inlinable
    public var searchName: String { name.lowercased() }

    @inlinable
    public var color: Color? {
        guard let colorName, let colorRed, let colorGreen, let colorBlue else { return nil }
        return Color(name: colorName, red: colorRed, green: colorGreen, blue: colorBlue)
    }

    @inlinable
    public var status: Status {
        inStock ? .inStock(quantity: quantity ?? 0) : .outOfStock(isOnBackOrder: isOnBackOrder ?? false)
    }

    /// The item of a row: these columns, its id, version and times (Unix milliseconds).
    @inlinable
    public func item(id: ItemID, version: Int, createdAt: Int64, updatedAt: Int64) -> Item {
        Item(
            id: id, name: name, color: color, status: status, version: version, createdAt: Timestamp.date(milliseconds: createdAt),
            updatedAt: Timestamp.date(milliseconds: updatedAt))
    }
}
