import Foundation
import GRDB
import StockroomCore
import Testing

import StockroomStorage
@testable import StockroomStore

/// The hub serves recent changes from memory; for every cursor and filter it must answer exactly
/// what the log answers.
@Suite struct RecentChangesTests {
    @Test func memoryAnswersEveryCursorAndFilterAsTheLogDoes() async throws {
        try await withTemporaryDatabase { database in
            var items: [Item] = []
            for index in 0..<6 {
                let origin = index.isMultiple(of: 2) ? Sample.erin(ClientID("phone-\(index)")!) : Sample.otto(ClientID("tablet-\(index)")!)
                let item = try await database.createItem(id: nil, draft: Sample.keyboard, origin: origin).value
                items.append(item)
                _ = try await database.runCommand(.openEdit(itemID: item.id), clientID: "phone", origin: Sample.erin("phone"))
                _ = try await database.runCommand(.push(route: .item(id: item.id)), clientID: "tablet", origin: Sample.otto("tablet"))
            }
            // Moves across `quantity <= 5`: in, out, in again, and a deleted item that matched.
            for (index, quantity) in [(1, 3), (2, 4), (1, 50), (2, 2), (3, 5)] {
                _ = try await database.updateItem(
                    items[index].id, draft: Draft(name: "Cable", color: nil, status: .inStock(quantity: quantity)), precondition: nil,
                    origin: Sample.erin)
            }
            try await database.deleteItem(items[3].id, precondition: nil, origin: Sample.erin)
            try await database.deleteItem(items[0].id, precondition: nil, origin: Sample.erin)
            _ = try await database.runCommand(.cancel, clientID: "phone", origin: Sample.erin("phone"))
            let head = database.hub.head
            #expect(head > 20)

            let filters = [
                FeedFilter(user: "erin", topics: [.item, .navigation]), FeedFilter(user: "otto", topics: [.navigation]),
                FeedFilter(user: "erin", topics: [.item]), FeedFilter(user: "nobody", topics: [.navigation]),
                FeedFilter(user: "erin", topics: [.item, .navigation], items: try ItemFilter(parsing: "quantity <= 5")),
                FeedFilter(user: "otto", topics: [.item], items: try ItemFilter(parsing: #"name = "Cable" and quantity > 3"#)),
            ]
            for filter in filters {
                for limit in [1, 2, 5, 1000] {
                    for seq in 0...head {
                        let logged = try await database.readLoggedChanges(after: seq, filter: filter, limit: limit)
                        let recent = try #require(database.hub.recentChanges(after: seq, filter: filter, limit: limit))
                        #expect(recent == logged, "after \(seq), \(filter), limit \(limit)")
                    }
                }
            }
            // Beyond the head, memory does not answer: the log refuses such a cursor.
            #expect(database.hub.recentChanges(after: head + 1, filter: filters[0], limit: 10) == nil)
        }
    }

    @Test func aTrimmedCursorIsNotServedFromMemory() async throws {
        try await withTemporaryDatabase { database in
            for _ in 0..<5 { _ = try await database.createItem(id: nil, draft: Sample.keyboard, origin: Sample.erin) }
            let filter = FeedFilter(user: "erin", topics: [.item])
            #expect(database.hub.recentChanges(after: 1, filter: filter, limit: 10) != nil)
            #expect(try await database.trimChanges(maxAge: .seconds(3600), maxEntries: 2) == 3)
            #expect(database.hub.recentChanges(after: 1, filter: filter, limit: 10) == nil)
            #expect(await failure { try await database.readChanges(after: 1, filter: filter, limit: 10) } == .resyncRequired)
            #expect(try await database.readChanges(after: 3, filter: filter, limit: 10).changes.map(\.seq) == [4, 5])
        }
    }
}
