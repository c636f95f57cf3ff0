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
    /// The longest colour name, in characters.
    public static let maxColorNameLength = 50

    /// Validates a draft, trimming its name; throws the first rule it breaks.
    public init(_ draft: Draft) throws(DomainError) {
        let name = draft.name.trimmingWhitespace()
        guard !name.isEmpty else { throw .validationFailed(field: "name", message: "name must not be empty") }
        guard name.count <= Self.maxNameLength else {
            throw .validationFailed(field: "name", message: "name must be at most \(Self.maxNameLength) characters")
        }
        if let color = draft.color {
            guard !color.name.isEmpty, color.name.count <= Self.maxColorNameLength else {
                throw .validationFailed(field: "color.name", message: "color name must be 1-\(Self.maxColorNameLength) characters")
            }
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
    /// The string without leading and trailing whitespace and newlines.
    func trimmingWhitespace() -> String {
        var slice = Substring(self)
        while let first = slice.first, first.isWhitespace { slice.removeFirst() }
        while let last = slice.last, last.isWhitespace { slice.removeLast() }
        return String(slice)
    }
}
