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

    /// Equal when every field is the same, names code point by code point as they are stored:
    /// String's `==` takes canonically equivalent spellings (`é`, and `e` with U+0301) for one, so a
    /// write of the other spelling would pass for no change.
    public static func == (lhs: Draft, rhs: Draft) -> Bool {
        lhs.name.utf8.elementsEqual(rhs.name.utf8) && lhs.color == rhs.color && lhs.status == rhs.status
    }
}

