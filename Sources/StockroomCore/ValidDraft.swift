/// A draft that passed validation: what may be written into an item.
public struct ValidDraft: Hashable, Sendable {
    /// The trimmed name, 1-200 characters.
    public let name: String
    /// The colour, valid if present.
    public let color: Color?
    /// The status, with a quantity in range.
    public let status: Status

    /// The largest quantity an item may hold.
    public static let maxQuantity = 1_000_000_000
    /// The longest item name, in characters, after trimming.
    public static let maxNameLength = 200
    /// The longest item name, in UTF-8 bytes: one character may hold any number of combining
    /// marks, so a count of characters alone does not bound what is stored.
    public static let maxNameBytes = 8192
    /// The longest colour name, in characters.
    public static let maxColorNameLength = 50
    /// The longest colour name, in UTF-8 bytes.
    public static let maxColorNameBytes = 2048

    /// Validates a draft, trimming its name; throws the first rule it breaks.
    public init(_ draft: Draft) throws(DomainError) {
        let name = draft.name.trimmingWhitespace()
        guard !name.isEmpty else { throw .validationFailed(field: "name", message: "name must not be empty") }
        try draft.checkSize()
        try TextRule.check(name, field: "name")
        if let color = draft.color {
            guard !color.name.isEmpty else {
                throw .validationFailed(field: "color.name", message: Draft.colorNameRule)
            }
            try TextRule.check(color.name, field: "color.name")
            for (field, value) in [("red", color.red), ("green", color.green), ("blue", color.blue)] {
                guard (0.0...1.0).contains(value) else {
                    throw .validationFailed(field: "color.\(field)", message: "color \(field) must be between 0 and 1")
                }
            }
        }
        if case .inStock(let quantity) = draft.status {
            guard (0...Self.maxQuantity).contains(quantity) else {
                throw .validationFailed(field: "status.inStock.quantity", message: "quantity must be between 0 and \(Self.maxQuantity)")
            }
        }
        self.name = name
        self.color = draft.color
        self.status = draft.status
    }

    /// The validated fields as a plain draft.
    public var draft: Draft { Draft(name: name, color: color, status: status) }
}

extension String {
    /// The string without leading and trailing whitespace and newlines: the characters made of
    /// whitespace alone. A space that carries a combining mark (`" \u{301}"`, one character whose
    /// first scalar is whitespace) stays, mark and all: trimming never drops what is not whitespace.
    func trimmingWhitespace() -> String {
        var slice = Substring(self)
        while let first = slice.first, first.isWhitespaceOnly { slice.removeFirst() }
        while let last = slice.last, last.isWhitespaceOnly { slice.removeLast() }
        return String(slice)
    }
}

extension Character {
    /// Whether every scalar of the character is whitespace (`isWhitespace` asks of the first alone).
    var isWhitespaceOnly: Bool { unicodeScalars.allSatisfy(\.properties.isWhitespace) }
}

extension Draft {
    static let nameRule =
        "name must be at most \(ValidDraft.maxNameLength) characters and \(ValidDraft.maxNameBytes) UTF-8 bytes"
    static let colorNameRule =
        "color name must be 1-\(ValidDraft.maxColorNameLength) characters and at most \(ValidDraft.maxColorNameBytes) UTF-8 bytes"

    /// Throws when a field is longer than an item may hold. A draft may be invalid while it is
    /// typed (an empty name, a quantity out of range), but never larger than an item: checked
    /// when a draft is typed (`updateDraft`), put (`PUT` navigation) and saved.
    public func checkSize() throws(DomainError) {
        // Bytes first: cheap, and it bounds the cost of counting characters. Characters are
        // counted trimmed, as the saved item's name will be.
        guard name.utf8.count <= ValidDraft.maxNameBytes, name.trimmingWhitespace().count <= ValidDraft.maxNameLength else {
            throw .validationFailed(field: "name", message: Self.nameRule)
        }
        if let color {
            guard color.name.utf8.count <= ValidDraft.maxColorNameBytes, color.name.count <= ValidDraft.maxColorNameLength
            else {
                throw .validationFailed(field: "color.name", message: Self.colorNameRule)
            }
        }
    }
}
