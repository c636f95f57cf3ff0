import StockroomCore
import StockroomStorage
import TestSupport
import Testing

/// The filter index finds every filter an item matches, among candidates it would not have to
/// check otherwise, as filters come and go.
@Suite("Filter index")
struct FilterIndexTests {
    @Test(arguments: 0..<20)
    func theCandidatesHoldEveryFilterAnItemMatches(seed: UInt64) {
        var random = SplitMix64(seed: seed)
        var index = FilterIndex<Int>()
        var filters: [Int: ItemFilter] = [:]
        for step in 0..<300 {
            // Filters come and go, and are replaced.
            let key = Int.random(in: 0..<60, using: &random)
            if Int.random(in: 0..<5, using: &random) == 0 {
                index.remove(key)
                filters[key] = nil
            } else {
                var budget = 8
                let filter = RandomFilters.filter(&random, depth: 2, budget: &budget)
                index.insert(filter, for: key)
                filters[key] = filter
            }
            #expect(index.count == filters.count)
            let item = RandomFilters.item(&random)
            let candidates = index.candidates(for: item)
            let matching = Set(filters.filter { $0.value.matches(item) }.keys)
            #expect(matching.isSubset(of: candidates), "step \(step): \(matching.subtracting(candidates).map { filters[$0]!.text })")
            #expect(candidates.isSubset(of: Set(filters.keys)), "no removed filter is a candidate")
        }
    }

    /// Equality and range terms keep a write's candidates to the filters it may match: 10,000
    /// filters on other names or quantities give none.
    @Test func filtersAnItemCannotMatchAreNotCandidates() throws {
        var index = FilterIndex<Int>()
        for key in 0..<10_000 {
            let filter = key.isMultiple(of: 2)
                ? try ItemFilter(parsing: "name = \"item \(key)\" and quantity > 0")
                : try ItemFilter(parsing: "quantity >= \(key + 100) or color in (\"c\(key)\", \"d\(key)\")")
            index.insert(filter, for: key)
        }
        index.insert(try ItemFilter(parsing: "not quantity = 5"), for: -1)
        let item = Item(
            id: .random(), name: "item 42", color: Color(name: "c7", red: 0, green: 0, blue: 0), status: .inStock(quantity: 150),
            version: 1, createdAt: Fixture.t0, updatedAt: Fixture.t0)
        // `name = "item 42"`, the colour of filter 7, quantity >= 100...149 (filters 1-49, odd), and the unindexed one.
        let expected = Set([42, 7, -1] + Array(stride(from: 1, through: 49, by: 2)))
        #expect(index.candidates(for: item) == expected)
    }
}
