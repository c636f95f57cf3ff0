import Foundation
import GRDB
import StockroomCore
import Testing

import StockroomStorage
@testable import StockroomStore

@Suite("Items: create, update, delete, list")
struct ItemStoreTests {
    @Test("create, update and delete: versions 1, 2, then a tombstone; the name is trimmed and lowercased for search")
    func createUpdateDeleteVersions() async throws {
        try await withTemporaryDatabase { database in
            let probe = Probe(database)
            let id = ItemID("0a0b0c0d-0000-4000-8000-00000000000a")!
            let typed = Draft(
                name: "  Ärger Keyboard \n", color: Color(name: "Black", red: 0, green: 0, blue: 0), status: .outOfStock(isOnBackOrder: false))

            let created = try await database.createItem(id: id, draft: typed, origin: Sample.erin).value
            #expect(
                created
                    == Item(
                        id: id, name: "Ärger Keyboard", color: Color(name: "Black", red: 0, green: 0, blue: 0),
                        status: .outOfStock(isOnBackOrder: false), version: 1, createdAt: created.createdAt, updatedAt: created.createdAt))
            #expect(try await database.item(id) == created)
            let rows = try await probe.itemRows()
            #expect(rows.count == 1)
            #expect(rows.first?["name"] as String? == "Ärger Keyboard")
            #expect(rows.first?["search_name"] as String? == "ärger keyboard")
            #expect(rows.first?["id"] as String? == "0a0b0c0d-0000-4000-8000-00000000000a")

            let updated = try await database.updateItem(id, draft: Sample.bluetooth, precondition: nil, origin: Sample.erin).value
            #expect(updated.updatedAt >= created.updatedAt)
            #expect(
                updated
                    == Item(
                        id: id, name: "Bluetooth Keyboard", color: nil, status: .inStock(quantity: 1000), version: 2,
                        createdAt: created.createdAt, updatedAt: updated.updatedAt))
            #expect(try await database.item(id) == updated)
            #expect(try await probe.itemRows().first?["search_name"] as String? == "bluetooth keyboard")

            let third = try await database.updateItem(id, draft: Sample.keyboard, precondition: .oneOf([2]), origin: Sample.erin).value
            #expect(third.version == 3)

            try await database.deleteItem(id, precondition: .oneOf([3]), origin: Sample.erin)
            #expect(try await database.item(id) == nil)
            let tombstone = try #require(try await probe.itemRows().first)
            #expect(tombstone["deleted_at"] as Int64? != nil)
            #expect(tombstone["version"] as Int? == 3)
            #expect(try await database.listItems(after: nil, limit: 10, query: nil, status: nil) == ItemPage(items: [], next: nil))

            #expect(
                try await probe.changes() == [
                    .itemUpsert(1, created, Sample.erin),
                    .itemUpsert(2, updated, Sample.erin),
                    .itemUpsert(3, third, Sample.erin),
                    .itemDelete(4, id, Sample.erin),
                ])
        }
    }

    @Test("a created item without an id gets a fresh lowercase UUID")
    func createWithoutID() async throws {
        try await withTemporaryDatabase { database in
            let first = try await database.createItem(id: nil, draft: Sample.keyboard, origin: Sample.erin).value
            let second = try await database.createItem(id: nil, draft: Sample.keyboard, origin: Sample.erin).value
            #expect(first.id != second.id)
            let ids = try await Probe(database).itemRows().map { $0["id"] as String? }
            #expect(ids == [first.id.description, second.id.description])
            #expect(ids.allSatisfy { $0 == $0?.lowercased() })
        }
    }

    @Test("list pages in creation order with a next position, and the last page has none")
    func listPagination() async throws {
        try await withTemporaryDatabase { database in
            var items: [Item] = []
            for name in ["Zebra", "Apple", "Mango", "Banana", "Cherry"] {
                items.append(try await database.createItem(id: nil, draft: Draft(name: name, color: nil, status: .inStock(quantity: 1)), origin: Sample.erin).value)
            }

            let page1 = try await database.listItems(after: nil, limit: 2, query: nil, status: nil)
            #expect(page1.items == Array(items[0..<2]))
            let next1 = try #require(page1.next)
            let page2 = try await database.listItems(after: next1, limit: 2, query: nil, status: nil)
            #expect(page2.items == Array(items[2..<4]))
            let next2 = try #require(page2.next)
            let page3 = try await database.listItems(after: next2, limit: 2, query: nil, status: nil)
            #expect(page3 == ItemPage(items: [items[4]], next: nil))

            // A page that ends exactly at the last item has no next.
            #expect(try await database.listItems(after: nil, limit: 5, query: nil, status: nil) == ItemPage(items: items, next: nil))

            // Deleted items vanish from lists without shifting the positions of the others.
            try await database.deleteItem(items[2].id, precondition: nil, origin: Sample.erin)
            let afterDelete = try await database.listItems(after: next1, limit: 2, query: nil, status: nil)
            #expect(afterDelete.items == [items[3], items[4]])
            #expect(afterDelete.next == nil)
        }
    }

    @Test("the query is a case-insensitive substring, with % and _ taken literally")
    func queryIsLiteralAndCaseInsensitive() async throws {
        try await withTemporaryDatabase { database in
            func make(_ name: String) async throws -> Item {
                try await database.createItem(id: nil, draft: Draft(name: name, color: nil, status: .inStock(quantity: 1)), origin: Sample.erin).value
            }
            let cotton100 = try await make("100% Cotton")
            _ = try await make("100 Cotton")
            let snake = try await make("snake_case cable")
            _ = try await make("snakeXcase cable")
            let bluetooth = try await make("Bluetooth KEYBOARD")
            let keyboard = try await make("keyboard")

            func names(_ query: String) async throws -> [Item] {
                try await database.listItems(after: nil, limit: 50, query: query, status: nil).items
            }
            #expect(try await names("%") == [cotton100])
            #expect(try await names("0% c") == [cotton100])
            #expect(try await names("_") == [snake])
            #expect(try await names("e_c") == [snake])
            #expect(try await names("KeyBoard") == [bluetooth, keyboard])
            #expect(try await names("bluetooth k") == [bluetooth])
            #expect(try await names("nothing like it") == [])
            // SQLite would see only what comes before a NUL ("key" matches two names); no name holds one.
            #expect(try await names("key\u{0}zzz") == [])
            #expect(try await names("\u{0}") == [])
            #expect(try await database.listItems(after: nil, limit: 50, query: "", status: nil).items.count == 6)

            let first = try await database.listItems(after: nil, limit: 1, query: "keyboard", status: nil)
            #expect(first.items == [bluetooth])
            let rest = try await database.listItems(after: first.next, limit: 1, query: "keyboard", status: nil)
            #expect(rest == ItemPage(items: [keyboard], next: nil))
        }
    }

    @Test("the status filter keeps in-stock or out-of-stock items, and combines with the query")
    func statusFilter() async throws {
        try await withTemporaryDatabase { database in
            let keyboard = try await database.createItem(id: nil, draft: Sample.keyboard, origin: Sample.erin).value
            let mouse = try await database.createItem(id: nil, draft: Sample.mouse, origin: Sample.erin).value
            let empty = try await database.createItem(
                id: nil, draft: Draft(name: "Empty Keyboard box", color: nil, status: .inStock(quantity: 0)), origin: Sample.erin).value
            let gone = try await database.createItem(
                id: nil, draft: Draft(name: "Gone keyboard", color: nil, status: .outOfStock(isOnBackOrder: false)), origin: Sample.erin).value

            #expect(try await database.listItems(after: nil, limit: 50, query: nil, status: .inStock).items == [keyboard, empty])
            #expect(try await database.listItems(after: nil, limit: 50, query: nil, status: .outOfStock).items == [mouse, gone])
            #expect(try await database.listItems(after: nil, limit: 50, query: "KEYBOARD", status: .outOfStock).items == [gone])
            #expect(try await database.listItems(after: nil, limit: 50, query: nil, status: nil).items == [keyboard, mouse, empty, gone])
        }
    }

    @Test("an id that exists or ever existed is refused with alreadyExists, in any case, and nothing is written")
    func idsAreNeverReused() async throws {
        try await withTemporaryDatabase { database in
            let probe = Probe(database)
            let id = ItemID("6f1c2e4a-1111-4000-8000-00000000abcd")!
            _ = try await database.createItem(id: id, draft: Sample.keyboard, origin: Sample.erin)
            let upper = ItemID("6F1C2E4A-1111-4000-8000-00000000ABCD")!

            var before = try await probe.snapshot()
            #expect(await failure { try await database.createItem(id: upper, draft: Sample.mouse, origin: Sample.erin) } == .alreadyExists(id))
            #expect(try await probe.snapshot() == before)

            try await database.deleteItem(id, precondition: nil, origin: Sample.erin)
            before = try await probe.snapshot()
            #expect(await failure { try await database.createItem(id: id, draft: Sample.mouse, origin: Sample.erin) } == .alreadyExists(id))
            #expect(try await probe.snapshot() == before)
            #expect(try await database.item(id) == nil)
        }
    }

    @Test("updating or deleting a missing or deleted item is notFound, and nothing is written")
    func missingItemIsNotFound() async throws {
        try await withTemporaryDatabase { database in
            let probe = Probe(database)
            let missing = ItemID.random()
            let deleted = try await database.createItem(id: nil, draft: Sample.keyboard, origin: Sample.erin).value
            try await database.deleteItem(deleted.id, precondition: nil, origin: Sample.erin)
            let before = try await probe.snapshot()

            for id in [missing, deleted.id] {
                #expect(await failure { try await database.updateItem(id, draft: Sample.mouse, precondition: nil, origin: Sample.erin) } == .notFound)
                #expect(await failure { try await database.updateItem(id, draft: Sample.mouse, precondition: .any, origin: Sample.erin) } == .notFound)
                #expect(await failure { try await database.deleteItem(id, precondition: nil, origin: Sample.erin) } == .notFound)
                #expect(await failure { try await database.deleteItem(id, precondition: .any, origin: Sample.erin) } == .notFound)
            }
            #expect(try await probe.snapshot() == before)
        }
    }

    @Test("a precondition that does not match is preconditionFailed(currentVersion:) and nothing is written")
    func preconditionMismatch() async throws {
        try await withTemporaryDatabase { database in
            let probe = Probe(database)
            let item = try await database.createItem(id: nil, draft: Sample.keyboard, origin: Sample.erin).value
            let v2 = try await database.updateItem(item.id, draft: Sample.mouse, precondition: .oneOf([1]), origin: Sample.erin).value
            let before = try await probe.snapshot()

            #expect(
                await failure { try await database.updateItem(item.id, draft: Sample.bluetooth, precondition: .oneOf([1, 3]), origin: Sample.erin) }
                    == .preconditionFailed(currentVersion: 2))
            #expect(
                await failure { try await database.deleteItem(item.id, precondition: .oneOf([1]), origin: Sample.erin) }
                    == .preconditionFailed(currentVersion: 2))
            #expect(try await probe.snapshot() == before)
            #expect(try await database.item(item.id) == v2)

            let v3 = try await database.updateItem(item.id, draft: Sample.bluetooth, precondition: .any, origin: Sample.erin).value
            #expect(v3.version == 3)
            try await database.deleteItem(item.id, precondition: .oneOf([2, 3]), origin: Sample.erin)
            #expect(try await database.item(item.id) == nil)
        }
    }

    @Test("an invalid draft is refused with validationFailed and nothing is written")
    func invalidDraftWritesNothing() async throws {
        try await withTemporaryDatabase { database in
            let probe = Probe(database)
            let item = try await database.createItem(id: nil, draft: Sample.keyboard, origin: Sample.erin).value
            let before = try await probe.snapshot()
            let changesBefore = try await probe.changeCount()

            #expect(
                await failure { try await database.createItem(id: nil, draft: Sample.blankName, origin: Sample.erin) }
                    == .domain(Sample.blankNameError))
            #expect(
                await failure { try await database.updateItem(item.id, draft: Sample.blankName, precondition: nil, origin: Sample.erin) }
                    == .domain(Sample.blankNameError))
            let badQuantity = Draft(name: "Crate", color: nil, status: .inStock(quantity: 1_000_000_001))
            #expect(
                await failure { try await database.createItem(id: nil, draft: badQuantity, origin: Sample.erin) }
                    == .domain(.validationFailed(field: "status.inStock.quantity", message: "quantity must be between 0 and 1000000000")))
            let badColor = Draft(name: "Crate", color: Color(name: "Ultra", red: 1.5, green: 0, blue: 0), status: .inStock(quantity: 1))
            #expect(
                await failure { try await database.updateItem(item.id, draft: badColor, precondition: .oneOf([1]), origin: Sample.erin) }
                    == .domain(.validationFailed(field: "color.red", message: "color red must be between 0 and 1")))

            #expect(try await probe.changeCount() == changesBefore)
            #expect(try await probe.snapshot() == before)
            #expect(try await database.item(item.id) == item)
        }
    }

    @Test("an update writes the item's page, the log's and the log's sequence: no page of the id index")
    func updateLeavesTheIdIndexAlone() async throws {
        try await withTemporaryFolder { folder in
            let path = folder.appendingPathComponent("stockroom.sqlite").path
            let database = try AppDatabase.open(path: path)
            // Enough items for the table and its id index to span many pages, so that an update that
            // rewrote its index entry would dirty a page of its own.
            let ids: [ItemID] = try await database.write { db in
                try (0..<2_000).map { index in
                    try AppDatabase.applyCreateItem(
                        db, id: nil, draft: Draft(name: "Item \(index)", color: nil, status: .inStock(quantity: index)), origin: Sample.erin
                    ).id
                }
            }
            try database.checkpoint()
            let wal = path + "-wal"
            func walSize() throws -> Int { (try FileManager.default.attributesOfItem(atPath: wal)[.size] as? Int) ?? 0 }
            let pageSize = try await database.writer.read { db in try Int.fetchOne(db, sql: "PRAGMA page_size") } ?? 0
            #expect(try walSize() == 0)

            // Two updates in a row: a split of the log's last page adds pages to at most one of them.
            var frames: [Int] = []
            var size = 32  // the WAL's header, written with its first frame
            for (index, id) in [ids[500], ids[1_500]].enumerated() {
                _ = try await database.updateItem(id, draft: Draft(name: "Renamed \(index)", color: nil, status: .inStock(quantity: 7)), precondition: nil, origin: Sample.erin)
                let now = try walSize()
                frames.append((now - size) / (pageSize + 24))
                size = now
            }
            #expect(frames.min() == 3, "WAL frames per update: \(frames)")
            #expect(try await database.item(ids[500])?.name == "Renamed 0")
        }
    }
}
