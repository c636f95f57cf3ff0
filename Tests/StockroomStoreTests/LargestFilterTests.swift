import Foundation
import StockroomCore
import StockroomStorage
import Testing

@testable import StockroomStore

/// The largest filter the limits allow, against 100,000 items: the snapshot and the feed under it
/// are exact, a feed page looks at no more rows than its bound, and one comparison or one byte
/// more is refused before anything is read.
@Suite("The largest allowed filter against 100,000 items")
struct LargestFilterTests {
    /// 32 comparisons, one of them an `in` of 100 values, within 1,024 bytes.
    static let largest: String = {
        let values = (0..<100).map(String.init).joined(separator: ",")
        let names = (0..<31).map { #"name = "Item \#(String(format: "%05d", 100 + $0 * 200))""# }
        return "quantity in (\(values)) or " + names.joined(separator: " or ")
    }()

    @Test func theLimitsHoldAtTheirEdge() throws {
        #expect(Self.largest.utf8.count <= ItemFilter.maxBytes)
        _ = try ItemFilter(parsing: Self.largest)
        #expect(throws: ItemFilterError.self) { try ItemFilter(parsing: Self.largest + #" or name = "x""#) }
        let padded = Self.largest + String(repeating: " ", count: ItemFilter.maxBytes + 1 - Self.largest.utf8.count)
        #expect(throws: ItemFilterError(position: 1, expected: "a filter of at most 1024 bytes")) { try ItemFilter(parsing: padded) }
        let values = (0...100).map(String.init).joined(separator: ",")
        #expect(throws: ItemFilterError.self) { try ItemFilter(parsing: "quantity in (\(values))") }
    }

    @Test func aSnapshotAndAFeedUnderItAreExact() async throws {
        let filter = try ItemFilter(parsing: Self.largest)
        try await withTemporaryDatabase { database in
            for batch in 0..<100 {
                let items = (0..<1000).map { offset -> BatchItem in
                    let index = batch * 1000 + offset
                    return BatchItem(id: nil, draft: Draft(name: String(format: "Item %05d", index), color: nil, status: .inStock(quantity: index % 200)))
                }
                _ = try await database.createItems(items, origin: Origin(user: "erin"), idempotency: nil)
            }
            // Independently of the filter's code: quantities 0-99 (half the items), and the 31
            // named items, each of quantity 100 (outside the list).
            let expected = 50_000 + 31
            let snapshot = try await database.snapshot(user: "erin", items: filter)
            #expect(snapshot.items.count == expected)
            #expect(snapshot.items.allSatisfy { item in
                if case .inStock(let quantity) = item.status, quantity < 100 { return true }
                return item.name.hasPrefix("Item ") && (Int(item.name.dropFirst(5))! - 100) % 200 == 0
            })

            var matched = 0
            var pages = 0
            var position: Int64 = 0
            let feed = FeedFilter(user: "erin", topics: [.item], items: filter)
            while true {
                let page = try await database.readChanges(after: position, filter: feed, limit: 1000)
                #expect(page.changes.count <= 1000)
                #expect(page.cursor.seq - position <= Int64(FeedPageBuilder.filteredScan), "a page looks at no more rows than its bound")
                matched += page.changes.count
                pages += 1
                position = page.cursor.seq
                if !page.hasMore { break }
            }
            #expect(matched == expected && position == 100_000)
            #expect(pages >= 100_000 / FeedPageBuilder.filteredScan)
        }
    }
}
