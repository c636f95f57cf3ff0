import StockroomCore

/// Random item filters and items for property tests of the filter grammar and its index: filters
/// of every form the grammar has, over a few names, colours and quantities, so that random items
/// match some of them.
public enum RandomFilters {
    public static let names = ["Red mug", "Lamp", "Blue \"chair\"", "De\\sk", "", "Caf\u{E9}"]
    public static let colors: [String?] = ["Red", "Blue", nil]

    /// A filter of at most `depth` levels and `budget` comparisons (spent as it is made).
    public static func filter(_ random: inout SplitMix64, depth: Int, budget: inout Int) -> ItemFilter {
        let choice = depth == 0 || budget < 3 ? 3 : Int.random(in: 0..<6, using: &random)
        switch choice {
        case 0, 1:
            let parts = (0..<Int.random(in: 2...3, using: &random)).map { _ in filter(&random, depth: depth - 1, budget: &budget) }
            return choice == 0 ? .and(parts) : .or(parts)
        case 2: return .not(filter(&random, depth: depth - 1, budget: &budget))
        default:
            budget -= 1
            return comparison(&random)
        }
    }

    static func comparison(_ random: inout SplitMix64) -> ItemFilter {
        let quantities: [Int64] = [-1, 0, 1, 3, 5, 10, 20]
        switch Int.random(in: 0..<8, using: &random) {
        case 0:
            return .comparison(.name, ItemFilter.Operator.allCases.randomElement(using: &random)!, .string(names.randomElement(using: &random)!))
        case 1:
            return .oneOf(.name, (0..<Int.random(in: 1...3, using: &random)).map { _ in .string(names.randomElement(using: &random)!) })
        case 2:
            let op = [ItemFilter.Operator.equal, .notEqual, .less, .lessOrEqual, .greater, .greaterOrEqual].randomElement(using: &random)!
            return .comparison(.quantity, op, .integer(quantities.randomElement(using: &random)!))
        case 3:
            return .oneOf(.quantity, (0..<Int.random(in: 1...3, using: &random)).map { _ in .integer(quantities.randomElement(using: &random)!) })
        case 4:
            let color = colors.randomElement(using: &random)!
            return .comparison(.color, [.equal, .notEqual].randomElement(using: &random)!, color.map { .string($0) } ?? .null)
        case 5:
            return .comparison(.onBackOrder, [.equal, .notEqual].randomElement(using: &random)!, .bool(Bool.random(using: &random)))
        case 6:
            let statuses: [ItemFilter.Value] = [.string("inStock"), .string("outOfStock")]
            return Bool.random(using: &random)
                ? .comparison(.status, [.equal, .notEqual].randomElement(using: &random)!, statuses.randomElement(using: &random)!)
                : .oneOf(.status, statuses.shuffled(using: &random).dropLast(Int.random(in: 0...1, using: &random)).map { $0 })
        default:
            return .comparison(.id, [.equal, .startsWith].randomElement(using: &random)!, .string(fixedIDs.randomElement(using: &random)!.description))
        }
    }

    /// The ids random items take, so that id terms match some.
    public static let fixedIDs = (1...4).map { ItemID("6f1c2e4a-0000-4000-8000-00000000000\($0)")! }

    /// A random item over the same names, colours, quantities and ids.
    public static func item(_ random: inout SplitMix64) -> Item {
        let status: Status = Bool.random(using: &random)
            ? .inStock(quantity: [0, 1, 3, 5, 10, 20].randomElement(using: &random)!)
            : .outOfStock(isOnBackOrder: Bool.random(using: &random))
        return Item(
            id: fixedIDs.randomElement(using: &random)!, name: names.randomElement(using: &random)!,
            color: colors.randomElement(using: &random)!.map { Color(name: $0, red: 0, green: 0, blue: 0) }, status: status, version: 1,
            createdAt: Timestamp.date(milliseconds: 0), updatedAt: Timestamp.date(milliseconds: 0))
    }
}
