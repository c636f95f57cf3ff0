/// An item's editable fields as typed by a user; may be invalid until saved.
public struct Draft: Hashable, Sendable {
    /// The name as typed (not yet trimmed).
    public var name: String
    /// The colour, if any.
    public var color: Color?
    /// Stock status.
    public var status: Status

    /// Creates a draft.
    public init(name: String, color: Color?, status: Status) {
        self.name = name
        self.color = color
        self.status = status
    }

    /// The draft an add sheet opens with.
    public static let blank = Draft(name: "", color: nil, status: .inStock(quantity: 1))
}

