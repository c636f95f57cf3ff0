import Foundation
import StockroomClient
import TestSupport
import Testing

/// Every field of the table (`ItemFields`) through the SDK, against a live server: the typed API's
/// create and read, the `SyncedStore` mirror fed by the snapshot and the feed, and the offline
/// queue's file, which keeps a draft's fields in its commands.
@Suite("Item fields through the SDK", .timeLimit(.minutes(10)))
@MainActor
struct ItemFieldSDKTests {
    @Test func everyFieldReachesTheClientAndItsStore() async throws {
        try await withServer { server in
            let client = try server.client()
            // Some items before the store loads (its snapshot), some after (the feed).
            var created: [Item] = []
            for draft in ItemFields.drafts.prefix(2) { created.append(try await client.createItem(draft)) }
            let store = try SyncedStore(client: client, clientID: "phone", queue: .inMemory(), options: testStoreOptions)
            store.start()
            defer { store.stop() }
            try await waitUntil(store, "loaded") { $0.isLoaded }
            for draft in ItemFields.drafts.dropFirst(2) { created.append(try await client.createItem(draft)) }

            for (draft, item) in zip(ItemFields.drafts, created) {
                #expect(item.draft == draft)
                #expect(try await client.item(item.id) == item)
            }
            try await waitUntil(store, "every item mirrored") { $0.itemsByID.count == created.count }
            for item in created { #expect(store.itemsByID[item.id] == item) }
        }
    }

    @Test func theOfflineQueueKeepsEveryFieldOfADraft() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("item-fields-\(UUID().uuidString).sqlite").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let id = ItemID.random()
        let writes = ItemFields.drafts.flatMap { draft -> [Write] in
            [.command(.updateDraft(draft: draft)), .createItem(id: id, draft: draft), .updateItem(id: id, draft: draft, ifVersion: 7)]
        }
        do {
            let queue = try WriteQueue(path: path)
            for write in writes { _ = try queue.enqueue(write, for: "phone") }
        }
        #expect(try WriteQueue(path: path).pending(for: "phone").map(\.write) == writes)
    }
}
