/// The filter grammar, by recursive descent over the text's Unicode scalars:
///
///     filter     = or
///     or         = and { "or" and }
///     and        = unary { "and" unary }
///     unary      = "not" unary | "(" or ")" | comparison
///     comparison = field op value | field "in" "(" value { "," value } ")"
///     field      = "id" | "name" | "color" | "status" | "quantity" | "onBackOrder"
///     op         = "=" | "!=" | "<" | "<=" | ">" | ">=" | "^="
///     value      = string | integer | "true" | "false" | "null"
///
/// Keywords are lower case; a string is in double quotes with `\"` and `\\` its only escapes.
/// Each value is checked against its field: `name`, `color`, `id` and `status` take strings
/// (`status` only `"inStock"` or `"outOfStock"`, `color` also `null`), `quantity` integers and
/// `onBackOrder` `true` or `false` with `=` and `!=` only; `^=` takes strings only.
extension ItemFilter {
    public init(parsing text: String) throws(ItemFilterError) {
        guard text.utf8.count <= Self.maxBytes else {
            throw ItemFilterError(position: 1, expected: "a filter of at most \(Self.maxBytes) bytes")
        }
        var parser = FilterParser(Array(text.unicodeScalars))
        let filter = try parser.or()
        guard parser.atEnd else { throw parser.error(expected: "'and', 'or' or the end of the filter") }
        self = filter
    }
}

struct FilterParser {
    private let scalars: [Unicode.Scalar]
    private var index = 0
    private var comparisons = 0

    init(_ scalars: [Unicode.Scalar]) {
        self.scalars = scalars
        skipSpace()
    }

    var atEnd: Bool { index == scalars.count }

    func error(expected: String, at position: Int? = nil) -> ItemFilterError {
        ItemFilterError(position: (position ?? index) + 1, expected: expected)
    }

    mutating func or() throws(ItemFilterError) -> ItemFilter {
        var terms = [try and()]
        while keyword("or") { terms.append(try and()) }
        return terms.count == 1 ? terms[0] : .or(terms)
    }

    mutating func and() throws(ItemFilterError) -> ItemFilter {
        var terms = [try unary()]
        while keyword("and") { terms.append(try unary()) }
        return terms.count == 1 ? terms[0] : .and(terms)
    }

    mutating func unary() throws(ItemFilterError) -> ItemFilter {
        if keyword("not") { return .not(try unary()) }
        if symbol("(") {
            let inner = try or()
            guard symbol(")") else { throw error(expected: "')'") }
            return inner
        }
        return try comparison()
    }

    mutating func comparison() throws(ItemFilterError) -> ItemFilter {
        let start = index
        let word = identifier()
        guard let field = ItemFilter.Field(rawValue: word) else {
            throw error(expected: "a field (id, name, color, status, quantity, onBackOrder) or '(' or 'not'", at: start)
        }
        comparisons += 1
        guard comparisons <= ItemFilter.maxComparisons else {
            throw error(expected: "at most \(ItemFilter.maxComparisons) comparisons", at: start)
        }
        if keyword("in") {
            guard symbol("(") else { throw error(expected: "'(' after 'in'") }
            var values: [ItemFilter.Value] = []
            repeat {
                guard values.count < ItemFilter.maxValuesInList else {
                    throw error(expected: "at most \(ItemFilter.maxValuesInList) values in one 'in'")
                }
                values.append(try value(for: field, op: .equal, at: index))
            } while symbol(",")
            guard symbol(")") else { throw error(expected: "',' or ')'") }
            return .oneOf(field, values)
        }
        let opStart = index
        guard let op = comparisonOperator() else { throw error(expected: "an operator (=, !=, <, <=, >, >=, ^=) or 'in'") }
        return .comparison(field, op, try value(for: field, op: op, at: opStart))
    }

    /// A value, checked against `field` and `op` (which starts at `opStart`): a value that does not
    /// fit is named at its own position, an operator the field does not take at the operator's.
    mutating func value(for field: ItemFilter.Field, op: ItemFilter.Operator, at opStart: Int) throws(ItemFilterError) -> ItemFilter.Value {
        let start = index
        let value = try literal()
        let fits: Bool
        let equality = op == .equal || op == .notEqual
        switch (field, value) {
        case (.name, .string), (.id, .string), (.color, .string): fits = true
        case (.color, .null): fits = equality
        case (.status, .string(let status)): fits = (status == "inStock" || status == "outOfStock") && equality
        case (.quantity, .integer): fits = op != .startsWith
        case (.onBackOrder, .bool): fits = equality
        default: fits = false
        }
        guard fits else {
            let operatorMisfit = (field == .status || field == .onBackOrder) && !equality || field == .quantity && op == .startsWith
            throw error(expected: Self.expectedValue(field, op), at: operatorMisfit ? opStart : start)
        }
        if field == .id, case .string(let id) = value { return .string(id.lowercased()) }
        return value
    }

    static func expectedValue(_ field: ItemFilter.Field, _ op: ItemFilter.Operator) -> String {
        switch field {
        case .name, .id: "a string"
        case .color: op == .equal || op == .notEqual ? "a string or null" : "a string"
        case .status: op == .equal || op == .notEqual ? "\"inStock\" or \"outOfStock\"" : "'=', '!=' or 'in' with status"
        case .quantity: op == .startsWith ? "a string field for '^='" : "an integer"
        case .onBackOrder: op == .equal || op == .notEqual ? "true or false" : "'=', '!=' or 'in' with onBackOrder"
        }
    }

    mutating func literal() throws(ItemFilterError) -> ItemFilter.Value {
        guard index < scalars.count else { throw error(expected: "a value") }
        let start = index
        let first = scalars[index]
        if first == "\"" { return .string(try string()) }
        if first == "-" || ("0"..."9").contains(first) {
            index += 1
            while index < scalars.count, ("0"..."9").contains(scalars[index]) { index += 1 }
            let digits = String(String.UnicodeScalarView(scalars[start..<index]))
            guard let number = Int64(digits) else { throw error(expected: "an integer in 64 bits", at: start) }
            skipSpace()
            return .integer(number)
        }
        switch identifier() {
        case "true": return .bool(true)
        case "false": return .bool(false)
        case "null": return .null
        default: throw error(expected: "a value (a string, an integer, true, false or null)", at: start)
        }
    }

    mutating func string() throws(ItemFilterError) -> String {
        index += 1
        var text = String.UnicodeScalarView()
        while index < scalars.count {
            let scalar = scalars[index]
            if scalar == "\"" {
                index += 1
                skipSpace()
                return String(text)
            }
            if scalar == "\\" {
                guard index + 1 < scalars.count, scalars[index + 1] == "\"" || scalars[index + 1] == "\\" else {
                    throw error(expected: "\\\" or \\\\ (the only escapes)")
                }
                text.append(scalars[index + 1])
                index += 2
            } else {
                text.append(scalar)
                index += 1
            }
        }
        throw error(expected: "'\"' to end the string")
    }

    /// The letters at `index` (consumed, with the spaces after them); empty if none.
    mutating func identifier() -> String {
        let start = index
        while index < scalars.count, ("a"..."z").contains(scalars[index]) || ("A"..."Z").contains(scalars[index]) {
            index += 1
        }
        let word = String(String.UnicodeScalarView(scalars[start..<index]))
        skipSpace()
        return word
    }

    /// Consumes `word` when it is the next word (not the start of a longer one).
    mutating func keyword(_ word: String) -> Bool {
        let save = index
        if identifier() == word { return true }
        index = save
        return false
    }

    mutating func symbol(_ symbol: Unicode.Scalar) -> Bool {
        guard index < scalars.count, scalars[index] == symbol else { return false }
        index += 1
        skipSpace()
        return true
    }

    mutating func comparisonOperator() -> ItemFilter.Operator? {
        let rest = scalars[index...].prefix(2)
        for op in [ItemFilter.Operator.notEqual, .lessOrEqual, .greaterOrEqual, .startsWith, .equal, .less, .greater] {
            let spelled = Array(op.rawValue.unicodeScalars)
            if rest.starts(with: spelled) {
                index += spelled.count
                skipSpace()
                return op
            }
        }
        return nil
    }

    mutating func skipSpace() {
        while index < scalars.count, scalars[index] == " " || scalars[index] == "\t" || scalars[index] == "\n" || scalars[index] == "\r" {
            index += 1
        }
    }
}
