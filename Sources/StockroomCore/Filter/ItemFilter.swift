/// A filter on items, as the feed's and the snapshot's `filter=` states it: comparisons of an item's
/// fields joined by `and`, `or` and `not`. Parsed and checked once (`init(parsing:)`), then
/// evaluated by `matches(_:)`, a pure function the server and the SDK share.
public indirect enum ItemFilter: Hashable, Sendable {
    case or([ItemFilter])
    case and([ItemFilter])
    case not(ItemFilter)
    /// `field op value`.
    case comparison(Field, Operator, Value)
    /// `field in (value, …)`.
    case oneOf(Field, [Value])

    /// The fields a filter may compare.
    public enum Field: String, Hashable, Sendable, CaseIterable {
        /// The item id (lower-case text).
        case id
        /// The name, compared by exact code points, case-sensitive.
        case name
        /// The colour's name; `null` for an item without one.
        case color
        /// `"inStock"` or `"outOfStock"`.
        case status
        /// An in-stock item's quantity.
        case quantity
        /// An out-of-stock item's back-order flag.
        case onBackOrder
    }

    public enum Operator: String, Hashable, Sendable, CaseIterable {
        case equal = "="
        case notEqual = "!="
        case less = "<"
        case lessOrEqual = "<="
        case greater = ">"
        case greaterOrEqual = ">="
        /// Starts with (strings only).
        case startsWith = "^="
    }

    /// A literal of a filter.
    public enum Value: Hashable, Sendable {
        case string(String)
        case integer(Int64)
        case bool(Bool)
        case null
    }

    /// The longest filter, in UTF-8 bytes.
    public static let maxBytes = 1_024
    /// The most comparisons (an `in` counts as one) one filter may hold.
    public static let maxComparisons = 32
    /// The most values of one `in`.
    public static let maxValuesInList = 100
}

/// Why a filter text is refused: the 1-based position of the character (Unicode scalar) where it
/// goes wrong, and what was expected there.
public struct ItemFilterError: Error, Hashable, Sendable, CustomStringConvertible {
    /// 1-based, in Unicode scalars; one past the end for a filter that ends too soon.
    public let position: Int
    /// What the filter needed there: "a field", "a value", "')'", …
    public let expected: String

    public init(position: Int, expected: String) {
        self.position = position
        self.expected = expected
    }

    public var description: String { "filter: at character \(position), expected \(expected)" }

    /// The contract's refusal: `validationFailed` on the field `filter`.
    public var domainError: DomainError { .validationFailed(field: "filter", message: description) }
}
