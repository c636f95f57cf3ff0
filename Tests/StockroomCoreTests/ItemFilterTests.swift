import Foundation
import StockroomCore
import TestSupport
import Testing

/// The feed's filter grammar (`ItemFilter`): what it reads, what it refuses and where, and which
/// items each filter matches.
@Suite("Item filters")
struct ItemFilterTests {
    static func item(_ name: String, color: String?, status: Status) -> Item {
        Item(
            id: .random(), name: name, color: color.map { Color(name: $0, red: 0, green: 0, blue: 0) }, status: status, version: 1,
            createdAt: Fixture.t0, updatedAt: Fixture.t0)
    }

    static let redMug = item("Red mug", color: "Red", status: .inStock(quantity: 3))
    static let plainLamp = item("Lamp", color: nil, status: .inStock(quantity: 10))
    static let blueChair = item("Blue chair", color: "Blue", status: .outOfStock(isOnBackOrder: true))
    static let oldDesk = item("Desk", color: nil, status: .outOfStock(isOnBackOrder: false))
    static let all = [redMug, plainLamp, blueChair, oldDesk]

    @Test func theContractsExampleReadsWithAndBeforeOr() throws {
        let filter = try ItemFilter(parsing: #"status = "inStock" and quantity <= 5 or color in ("Red", "Blue")"#)
        #expect(filter == .or([
            .and([.comparison(.status, .equal, .string("inStock")), .comparison(.quantity, .lessOrEqual, .integer(5))]),
            .oneOf(.color, [.string("Red"), .string("Blue")]),
        ]))
        #expect(Self.all.filter(filter.matches) == [Self.redMug, Self.blueChair])
    }

    @Test(arguments: [
        (#"name = "Lamp""#, ["Lamp"]),
        (#"name != "Lamp""#, ["Red mug", "Blue chair", "Desk"]),
        (#"name ^= "Bl""#, ["Blue chair"]),
        (#"name < "M""#, ["Lamp", "Blue chair", "Desk"]),
        (#"color = null"#, ["Lamp", "Desk"]),
        (#"color != null"#, ["Red mug", "Blue chair"]),
        (#"color != "Red""#, ["Blue chair"]),  // an item without a colour has no colour name to differ
        (#"quantity > 3"#, ["Lamp"]),
        (#"quantity >= 3"#, ["Red mug", "Lamp"]),
        (#"quantity != 3"#, ["Lamp"]),  // out-of-stock items have no quantity
        (#"not quantity = 3"#, ["Lamp", "Blue chair", "Desk"]),
        (#"onBackOrder = true"#, ["Blue chair"]),
        (#"onBackOrder != true"#, ["Desk"]),
        (#"status = "outOfStock" and not onBackOrder = true"#, ["Desk"]),
        (#"not (color = "Red" or color = "Blue")"#, ["Lamp", "Desk"]),
        (#"quantity in (1, 2, 3)"#, ["Red mug"]),
        (#"status in ("outOfStock")"#, ["Blue chair", "Desk"]),
        (#"  name="Desk"or(quantity<4)  "#, ["Red mug", "Desk"]),
    ])
    func eachFilterMatchesWhatTheContractSays(text: String, names: [String]) throws {
        let filter = try ItemFilter(parsing: text)
        #expect(Self.all.filter(filter.matches).map(\.name) == names)
    }

    @Test func namesCompareByCodePointsAndIdsWithoutCase() throws {
        let composed = Self.item("Caf\u{E9}", color: nil, status: .inStock(quantity: 1))
        #expect(try ItemFilter(parsing: "name = \"Caf\u{E9}\"").matches(composed))
        #expect(try !ItemFilter(parsing: "name = \"Cafe\u{301}\"").matches(composed), "canonically equivalent, other code points")
        #expect(try !ItemFilter(parsing: "name = \"CAF\u{C9}\"").matches(composed), "case-sensitive")
        let id = Self.redMug.id.description
        #expect(try ItemFilter(parsing: "id = \"\(id.uppercased())\"").matches(Self.redMug))
        #expect(try ItemFilter(parsing: #"name = "a \"quoted\" \\ name""#) == .comparison(.name, .equal, .string(#"a "quoted" \ name"#)))
    }

    @Test(arguments: [
        ("", 1, "a field"),
        ("name", 5, "an operator"),
        ("name =", 7, "a value"),
        (#"quantity = "3""#, 12, "an integer"),
        (#"Name = "x""#, 1, "a field"),
        (#"name = "x" AND quantity = 1"#, 12, "'and', 'or'"),
        (#"name = "x"#, 10, "'\"' to end the string"),
        (#"name = "a\nb""#, 10, "the only escapes"),
        (#"status = "sold""#, 10, "\"inStock\" or \"outOfStock\""),
        // An operator the field does not take is named where the operator is.
        ("quantity ^= 5", 10, "a string field"),
        ("onBackOrder < true", 13, "'=', '!=' or 'in'"),
        (#"status ^= "in""#, 8, "'=', '!=' or 'in' with status"),
        (#"status < "outOfStock""#, 8, "'=', '!=' or 'in' with status"),
        (#"status >= "inStock""#, 8, "'=', '!=' or 'in' with status"),
        ("color < null", 9, "a string"),
        ("quantity = 99999999999999999999", 12, "an integer in 64 bits"),
        (#"(name = "x""#, 12, "')'"),
        ("quantity in (1, 2", 18, "',' or ')'"),
        ("quantity in 1", 13, "'(' after 'in'"),
        ("not", 4, "a field"),
    ])
    func aBadFilterNamesThePositionAndWhatWasExpected(text: String, position: Int, expected: String) {
        #expect {
            try ItemFilter(parsing: text)
        } throws: { error in
            guard let error = error as? ItemFilterError else { return false }
            return error.position == position && error.expected.contains(expected)
                && error.domainError == .validationFailed(field: "filter", message: error.description)
        }
    }

    @Test func theLimitsAreTheContracts() throws {
        let comparisons = Array(repeating: "quantity = 1", count: ItemFilter.maxComparisons)
        _ = try ItemFilter(parsing: comparisons.joined(separator: " or "))
        #expect(throws: ItemFilterError.self) { try ItemFilter(parsing: (comparisons + ["quantity = 2"]).joined(separator: " or ")) }
        let values = (0..<ItemFilter.maxValuesInList).map(String.init)
        _ = try ItemFilter(parsing: "quantity in (\(values.joined(separator: ",")))")
        #expect(throws: ItemFilterError.self) { try ItemFilter(parsing: "quantity in (\((values + ["7"]).joined(separator: ",")))") }
        let long = "name = \"" + String(repeating: "x", count: ItemFilter.maxBytes - 9) + "\""
        #expect(long.utf8.count == ItemFilter.maxBytes)
        _ = try ItemFilter(parsing: long)
        #expect(throws: ItemFilterError.self) { try ItemFilter(parsing: long + " ") }
    }

    /// Any filter written as text reads back as itself, and matches as itself.
    @Test(arguments: 0..<20)
    func aFiltersTextReadsBackAsTheSameFilter(seed: UInt64) throws {
        var random = SplitMix64(seed: seed)
        for _ in 0..<50 {
            var budget = ItemFilter.maxComparisons
            let filter = RandomFilters.filter(&random, depth: 3, budget: &budget)
            let read = try ItemFilter(parsing: filter.text)
            #expect(read == filter, "\(filter.text)")
            for item in Self.all + (0..<8).map({ _ in RandomFilters.item(&random) }) { #expect(read.matches(item) == filter.matches(item)) }
        }
    }
}
