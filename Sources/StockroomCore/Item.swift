import Foundation

/// An inventory item as stored: its editable fields plus identity and bookkeeping.
public struct Item: Hashable, Sendable {
    /// The item's identifier.
    public var id: ItemID
    /// The item's name, trimmed.
    public var name: String
    /// The item's colour, if any.
    public var color: Color?
    /// Stock status.
    public var status: Status
    /// Starts at 1 and grows by one on every write.
    public var version: Int
    /// When the item was created.
    public var createdAt: Date
    /// When the item was last written.
    public var updatedAt: Date

    /// Creates an item.
    public init(id: ItemID, name: String, color: Color?, status: Status, version: Int, createdAt: Date, updatedAt: Date) {
        self.id = id
        self.name = name
        self.color = color
        self.status = status
        self.version = version
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }

    /// The item's editable fields, as an edit draft starts out.
    public var draft: Draft { Draft(name: name, color: color, status: status) }

    /// Equal when every field is the same, the name code point by code point (see `Draft`'s `==`).
    public static func == (lhs: Item, rhs: Item) -> Bool {
        lhs.id == rhs.id && lhs.name.utf8.elementsEqual(rhs.name.utf8) && lhs.color == rhs.color && lhs.status == rhs.status
            && lhs.version == rhs.version && lhs.createdAt == rhs.createdAt && lhs.updatedAt == rhs.updatedAt
    }
}
