/// Whether an item matches: a comparison on a field the item does not have (an out-of-stock
/// item's quantity, an in-stock item's back-order flag, the colour name of an item without a
/// colour) is false, whatever the operator; `color = null` holds for an item without a colour and
/// `color != null` for one with.
extension ItemFilter {
    public func matches(_ item: Item) -> Bool {
        switch self {
        case .or(let filters): return filters.contains { $0.matches(item) }
        case .and(let filters): return filters.allSatisfy { $0.matches(item) }
        case .not(let filter): return !filter.matches(item)
        case .comparison(let field, let op, let value): return Self.compare(field.value(of: item), op, value)
        case .oneOf(let field, let values):
            let actual = field.value(of: item)
            return values.contains { Self.compare(actual, .equal, $0) }
        }
    }

    /// `actual op expected`; `actual` nil: the item does not have the field.
    static func compare(_ actual: Value?, _ op: Operator, _ expected: Value) -> Bool {
        switch (actual, expected) {
        case (.null, .null): return op == .equal
        case (.string, .null): return op == .notEqual
        case (.string(let actual), .string(let expected)):
            if op == .startsWith { return actual.unicodeScalars.starts(with: expected.unicodeScalars) }
            return op.holds(Self.order(actual, expected))
        case (.integer(let actual), .integer(let expected)):
            return op.holds(actual < expected ? -1 : actual == expected ? 0 : 1)
        case (.bool(let actual), .bool(let expected)):
            return op == .equal ? actual == expected : op == .notEqual && actual != expected
        default:
            return false
        }
    }

    /// Code-point order (`<0`, `0`, `>0`): names compare as the exact scalars they hold, not as
    /// Swift's canonically equivalent `String`s.
    static func order(_ a: String, _ b: String) -> Int {
        var left = a.unicodeScalars.makeIterator()
        var right = b.unicodeScalars.makeIterator()
        while true {
            switch (left.next(), right.next()) {
            case (nil, nil): return 0
            case (nil, _): return -1
            case (_, nil): return 1
            case (let x?, let y?) where x != y: return x.value < y.value ? -1 : 1
            default: continue
            }
        }
    }
}

extension ItemFilter.Operator {
    /// Whether the operator holds for an order (`<0`, `0`, `>0`); `^=` is handled by the caller.
    func holds(_ order: Int) -> Bool {
        switch self {
        case .equal: order == 0
        case .notEqual: order != 0
        case .less: order < 0
        case .lessOrEqual: order <= 0
        case .greater: order > 0
        case .greaterOrEqual: order >= 0
        case .startsWith: false
        }
    }
}

extension ItemFilter.Field {
    /// The item's value of this field; nil when the item does not have it.
    public func value(of item: Item) -> ItemFilter.Value? {
        switch self {
        case .id: return .string(item.id.description)
        case .name: return .string(item.name)
        case .color: return item.color.map { .string($0.name) } ?? .null
        case .status:
            if case .inStock = item.status { return .string("inStock") }
            return .string("outOfStock")
        case .quantity:
            if case .inStock(let quantity) = item.status { return .integer(Int64(quantity)) }
            return nil
        case .onBackOrder:
            if case .outOfStock(let flag) = item.status { return .bool(flag) }
            return nil
        }
    }
}
