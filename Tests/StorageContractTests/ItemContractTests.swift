import Foundation
import StockroomCore
import StockroomStorage
import TestSupport
import Testing

/// Items on every backend: versions, ids never reused, lists, refusals that write nothing. (Moved
/// from StockroomStoreTests/ItemStoreTests, which keeps what only SQLite's tables show.)
@Suite("Storage contract: items (create, update, delete, list)")
struct ItemContractTests {
    /// Versions 1, 2, 3, then gone; the name is trimmed, and search finds it case-insensitively.
    @Test(arguments: StorageBackend.all)
    func createUpdateDeleteVersions(backend: StorageBackend) async throws {
        try await withStorage(backend) { storage in
            let id = ItemID("0a0b0c0d-0000-4000-8000-00000000000a")!
            let typed = Draft(
                name: "  Ärger Keyboard \n", color: Color(name: "Black", red: 0, green: 0, blue: 0), status: .outOfStock(isOnBackOrder: false))

            let created = try await storage.createItem(id: id, draft: typed, origin: Sample.erin).value
            #expect(
                created
                    == Item(
                        id: id, name: "Ärger Keyboard", color: Color(name: "Black", red: 0, green: 0, blue: 0),
                        status: .outOfStock(isOnBackOrder: false), version: 1, createdAt: created.createdAt, updatedAt: created.createdAt))
            #expect(created.id.description == "0a0b0c0d-0000-4000-8000-00000000000a")
            #expect(try await storage.item(id) == created)
            #expect(try await storage.listItems(after: nil, limit: 10, query: "ÄRGER KEY", status: nil).items == [created])

            let updated = try await storage.updateItem(id, draft: Sample.bluetooth, precondition: nil, origin: Sample.erin).value
            #expect(updated.updatedAt >= created.updatedAt)
            #expect(
                updated
                    == Item(
                        id: id, name: "Bluetooth Keyboard", color: nil, status: .inStock(quantity: 1000), version: 2,
                        createdAt: created.createdAt, updatedAt: updated.updatedAt))
            #expect(try await storage.item(id) == updated)
            #expect(try await storage.listItems(after: nil, limit: 10, query: "ärger", status: nil).items == [])
            #expect(try await storage.listItems(after: nil, limit: 10, query: "bluetooth", status: nil).items == [updated])

            let third = try await storage.updateItem(id, draft: Sample.keyboard, precondition: .oneOf([2]), origin: Sample.erin).value
            #expect(third.version == 3)

            try await storage.deleteItem(id, precondition: .oneOf([3]), origin: Sample.erin)
            #expect(try await storage.item(id) == nil)
            #expect(try await storage.listItems(after: nil, limit: 10, query: nil, status: nil) == ItemPage(items: [], next: nil))

            #expect(
                try await loggedChanges(storage) == [
                    .itemUpsert(1, created, Sample.erin),
                    .itemUpsert(2, updated, Sample.erin),
                    .itemUpsert(3, third, Sample.erin),
                    .itemDelete(4, id, Sample.erin),
                ])
        }
    }

    /// A created item without an id gets a fresh lowercase UUID.
    @Test(arguments: StorageBackend.all)
    func createWithoutID(backend: StorageBackend) async throws {
        try await withStorage(backend) { storage in
            let first = try await storage.createItem(id: nil, draft: Sample.keyboard, origin: Sample.erin).value
            let second = try await storage.createItem(id: nil, draft: Sample.keyboard, origin: Sample.erin).value
            #expect(first.id != second.id)
            let ids = try await storage.listItems(after: nil, limit: 10, query: nil, status: nil).items.map(\.id.description)
            #expect(ids == [first.id.description, second.id.description])
            #expect(ids.allSatisfy { $0 == $0.lowercased() && UUID(uuidString: $0) != nil })
        }
    }

    /// Lists page in creation order with a next position, and the last page has none.
    @Test(arguments: StorageBackend.all)
    func listPagination(backend: StorageBackend) async throws {
        try await withStorage(backend) { storage in
            var items: [Item] = []
            for name in ["Zebra", "Apple", "Mango", "Banana", "Cherry"] {
                items.append(
                    try await storage.createItem(id: nil, draft: Draft(name: name, color: nil, status: .inStock(quantity: 1)), origin: Sample.erin)
                        .value)
            }

            let page1 = try await storage.listItems(after: nil, limit: 2, query: nil, status: nil)
            #expect(page1.items == Array(items[0..<2]))
            let next1 = try #require(page1.next)
            let page2 = try await storage.listItems(after: next1, limit: 2, query: nil, status: nil)
            #expect(page2.items == Array(items[2..<4]))
            let next2 = try #require(page2.next)
            let page3 = try await storage.listItems(after: next2, limit: 2, query: nil, status: nil)
            #expect(page3 == ItemPage(items: [items[4]], next: nil))

            // A page that ends exactly at the last item has no next.
            #expect(try await storage.listItems(after: nil, limit: 5, query: nil, status: nil) == ItemPage(items: items, next: nil))

            // Deleted items vanish from lists without shifting the positions of the others.
            try await storage.deleteItem(items[2].id, precondition: nil, origin: Sample.erin)
            let afterDelete = try await storage.listItems(after: next1, limit: 2, query: nil, status: nil)
            #expect(afterDelete.items == [items[3], items[4]])
            #expect(afterDelete.next == nil)
        }
    }

    /// The query is a case-insensitive substring, with % and _ taken literally, and a NUL matches nothing.
    @Test(arguments: StorageBackend.all)
    func queryIsLiteralAndCaseInsensitive(backend: StorageBackend) async throws {
        try await withStorage(backend) { storage in
            func make(_ name: String) async throws -> Item {
                try await storage.createItem(id: nil, draft: Draft(name: name, color: nil, status: .inStock(quantity: 1)), origin: Sample.erin).value
            }
            let cotton100 = try await make("100% Cotton")
            _ = try await make("100 Cotton")
            let snake = try await make("snake_case cable")
            _ = try await make("snakeXcase cable")
            let bluetooth = try await make("Bluetooth KEYBOARD")
            let keyboard = try await make("keyboard")

            func names(_ query: String) async throws -> [Item] {
                try await storage.listItems(after: nil, limit: 50, query: query, status: nil).items
            }
            #expect(try await names("%") == [cotton100])
            #expect(try await names("0% c") == [cotton100])
            #expect(try await names("_") == [snake])
            #expect(try await names("e_c") == [snake])
            #expect(try await names("KeyBoard") == [bluetooth, keyboard])
            #expect(try await names("bluetooth k") == [bluetooth])
            #expect(try await names("nothing like it") == [])
            // No name holds a NUL, so a query with one matches nothing (SQLite would see only what
            // comes before it, and "key" matches two names).
            #expect(try await names("key\u{0}zzz") == [])
            #expect(try await names("\u{0}") == [])
            #expect(try await storage.listItems(after: nil, limit: 50, query: "", status: nil).items.count == 6)

            let first = try await storage.listItems(after: nil, limit: 1, query: "keyboard", status: nil)
            #expect(first.items == [bluetooth])
            let rest = try await storage.listItems(after: first.next, limit: 1, query: "keyboard", status: nil)
            #expect(rest == ItemPage(items: [keyboard], next: nil))
        }
    }

    /// The status filter keeps in-stock or out-of-stock items, and combines with the query.
    @Test(arguments: StorageBackend.all)
    func statusFilter(backend: StorageBackend) async throws {
        try await withStorage(backend) { storage in
            let keyboard = try await storage.createItem(id: nil, draft: Sample.keyboard, origin: Sample.erin).value
            let mouse = try await storage.createItem(id: nil, draft: Sample.mouse, origin: Sample.erin).value
            let empty = try await storage.createItem(
                id: nil, draft: Draft(name: "Empty Keyboard box", color: nil, status: .inStock(quantity: 0)), origin: Sample.erin
            ).value
            let gone = try await storage.createItem(
                id: nil, draft: Draft(name: "Gone keyboard", color: nil, status: .outOfStock(isOnBackOrder: false)), origin: Sample.erin
            ).value

            #expect(try await storage.listItems(after: nil, limit: 50, query: nil, status: .inStock).items == [keyboard, empty])
            #expect(try await storage.listItems(after: nil, limit: 50, query: nil, status: .outOfStock).items == [mouse, gone])
            #expect(try await storage.listItems(after: nil, limit: 50, query: "KEYBOARD", status: .outOfStock).items == [gone])
            #expect(try await storage.listItems(after: nil, limit: 50, query: nil, status: nil).items == [keyboard, mouse, empty, gone])
        }
    }

    /// An id that exists or ever existed is refused with alreadyExists, in any case, and nothing is written.
    @Test(arguments: StorageBackend.all)
    func idsAreNeverReused(backend: StorageBackend) async throws {
        try await withStorage(backend) { storage in
            let id = ItemID("6f1c2e4a-1111-4000-8000-00000000abcd")!
            try await storage.createItem(id: id, draft: Sample.keyboard, origin: Sample.erin)
            let upper = ItemID("6F1C2E4A-1111-4000-8000-00000000ABCD")!

            var before = try await observe(storage)
            #expect(await failure { try await storage.createItem(id: upper, draft: Sample.mouse, origin: Sample.erin) } == .alreadyExists(id))
            #expect(try await observe(storage) == before)

            try await storage.deleteItem(id, precondition: nil, origin: Sample.erin)
            before = try await observe(storage)
            #expect(await failure { try await storage.createItem(id: id, draft: Sample.mouse, origin: Sample.erin) } == .alreadyExists(id))
            #expect(await failure { try await storage.createItem(id: upper, draft: Sample.mouse, origin: Sample.erin) } == .alreadyExists(id))
            #expect(try await observe(storage) == before)
            #expect(try await storage.item(id) == nil)
        }
    }

    /// 409 comes before 422: an id that exists, or existed, is refused as existing whatever its
    /// draft, and nothing is written.
    @Test(arguments: StorageBackend.all)
    func anExistingIDWithAnInvalidDraftIsRefusedAsExisting(backend: StorageBackend) async throws {
        try await withStorage(backend) { storage in
            let live = try await storage.createItem(id: nil, draft: Sample.keyboard, origin: Sample.erin).value
            let deleted = try await storage.createItem(id: nil, draft: Sample.mouse, origin: Sample.erin).value
            try await storage.deleteItem(deleted.id, precondition: nil, origin: Sample.erin)
            let invalid = [
                Sample.blankName,
                Draft(name: "", color: nil, status: .inStock(quantity: 1)),
                Draft(name: "Crate", color: nil, status: .inStock(quantity: 1_000_000_001)),
            ]
            let before = try await observe(storage)
            for id in [live.id, deleted.id] {
                for draft in invalid {
                    let refusal = await failure { try await storage.createItem(id: id, draft: draft, origin: Sample.erin) }
                    #expect(refusal == .alreadyExists(id), "\(id == live.id ? "live" : "deleted") id, draft \(draft)")
                }
            }
            #expect(try await observe(storage) == before)
        }
    }

    /// Updating or deleting a missing or deleted item is notFound, and nothing is written.
    @Test(arguments: StorageBackend.all)
    func missingItemIsNotFound(backend: StorageBackend) async throws {
        try await withStorage(backend) { storage in
            let missing = ItemID.random()
            let deleted = try await storage.createItem(id: nil, draft: Sample.keyboard, origin: Sample.erin).value
            try await storage.deleteItem(deleted.id, precondition: nil, origin: Sample.erin)
            let before = try await observe(storage)

            for id in [missing, deleted.id] {
                #expect(await failure { try await storage.updateItem(id, draft: Sample.mouse, precondition: nil, origin: Sample.erin) } == .notFound)
                #expect(await failure { try await storage.updateItem(id, draft: Sample.mouse, precondition: .any, origin: Sample.erin) } == .notFound)
                #expect(await failure { try await storage.deleteItem(id, precondition: nil, origin: Sample.erin) } == .notFound)
                #expect(await failure { try await storage.deleteItem(id, precondition: .any, origin: Sample.erin) } == .notFound)
            }
            #expect(try await observe(storage) == before)
        }
    }

    /// A precondition that does not match is preconditionFailed(currentVersion:) and nothing is written.
    @Test(arguments: StorageBackend.all)
    func preconditionMismatch(backend: StorageBackend) async throws {
        try await withStorage(backend) { storage in
            let item = try await storage.createItem(id: nil, draft: Sample.keyboard, origin: Sample.erin).value
            let v2 = try await storage.updateItem(item.id, draft: Sample.mouse, precondition: .oneOf([1]), origin: Sample.erin).value
            let before = try await observe(storage)

            #expect(
                await failure { try await storage.updateItem(item.id, draft: Sample.bluetooth, precondition: .oneOf([1, 3]), origin: Sample.erin) }
                    == .preconditionFailed(currentVersion: 2))
            #expect(
                await failure { try await storage.deleteItem(item.id, precondition: .oneOf([1]), origin: Sample.erin) }
                    == .preconditionFailed(currentVersion: 2))
            #expect(try await observe(storage) == before)
            #expect(try await storage.item(item.id) == v2)

            let v3 = try await storage.updateItem(item.id, draft: Sample.bluetooth, precondition: .any, origin: Sample.erin).value
            #expect(v3.version == 3)
            try await storage.deleteItem(item.id, precondition: .oneOf([2, 3]), origin: Sample.erin)
            #expect(try await storage.item(item.id) == nil)
        }
    }

    /// An invalid draft is refused with validationFailed, the field and message named, and nothing is
    /// written: the next write takes the next seq.
    @Test(arguments: StorageBackend.all)
    func invalidDraftWritesNothing(backend: StorageBackend) async throws {
        try await withStorage(backend) { storage in
            let item = try await storage.createItem(id: nil, draft: Sample.keyboard, origin: Sample.erin).value
            let before = try await observe(storage)

            #expect(
                await failure { try await storage.createItem(id: nil, draft: Sample.blankName, origin: Sample.erin) }
                    == .domain(Sample.blankNameError))
            #expect(
                await failure { try await storage.updateItem(item.id, draft: Sample.blankName, precondition: nil, origin: Sample.erin) }
                    == .domain(Sample.blankNameError))
            let badQuantity = Draft(name: "Crate", color: nil, status: .inStock(quantity: 1_000_000_001))
            #expect(
                await failure { try await storage.createItem(id: nil, draft: badQuantity, origin: Sample.erin) }
                    == .domain(.validationFailed(field: "status.inStock.quantity", message: "quantity must be between 0 and 1000000000")))
            let badColor = Draft(name: "Crate", color: Color(name: "Ultra", red: 1.5, green: 0, blue: 0), status: .inStock(quantity: 1))
            #expect(
                await failure { try await storage.updateItem(item.id, draft: badColor, precondition: .oneOf([1]), origin: Sample.erin) }
                    == .domain(.validationFailed(field: "color.red", message: "color red must be between 0 and 1")))

            #expect(try await observe(storage) == before)
            #expect(try await storage.item(item.id) == item)
            let next = try await storage.createItem(id: nil, draft: Sample.mouse, origin: Sample.erin).value
            #expect(try await loggedChanges(storage, after: before.head) == [.itemUpsert(before.head + 1, next, Sample.erin)])
        }
    }
}
