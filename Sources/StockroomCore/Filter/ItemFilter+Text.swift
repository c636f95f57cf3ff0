/// A filter as the text `init(parsing:)` reads back to the same filter: what a client sends as
/// `filter=` (before URL-encoding). A compound operand is parenthesized.
extension ItemFilter {
    public var text: String {
        switch self {
        case .or(let filters): return filters.map(\.operandText).joined(separator: " or ")
        case .and(let filters): return filters.map(\.operandText).joined(separator: " and ")
        case .not(let filter): return "not " + filter.operandText
        case .comparison(let field, let op, let value): return "\(field.rawValue) \(op.rawValue) \(value.text)"
        case .oneOf(let field, let values): return "\(field.rawValue) in (\(values.map(\.text).joined(separator: ", ")))"
        }
    }

    private var operandText: String {
        switch self {
        case .or, .and: "(\(text))"
        case .not, .comparison, .oneOf: text
        }
    }
}

extension ItemFilter.Value {
    /// The literal as the grammar spells it.
    public var text: String {
        switch self {
        case .string(let string):
            var quoted = "\""
            for scalar in string.unicodeScalars {
                if scalar == "\"" || scalar == "\\" { quoted.unicodeScalars.append("\\") }
                quoted.unicodeScalars.append(scalar)
            }
            return quoted + "\""
        case .integer(let number): return String(number)
        case .bool(let flag): return flag ? "true" : "false"
        case .null: return "null"
        }
    }
}
