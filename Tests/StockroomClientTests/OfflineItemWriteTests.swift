import Foundation
import GRDB
@testable import StockroomClient
import Testing

/// Item writes through `SyncedStore`: queued and shown at once like commands, persisted, delivered
/// in order exactly once, and refused into `failedWrites` with their drafts.
@Suite("Offline item writes", .timeLimit(.minutes(10)))
@MainActor
struct OfflineItemWriteTests {
    /// The writes of one key, as origins in the server's log (the feed's own record of what applied).
    func applied(_ server: TestServer, key: String) async throws -> Int {
        try await server.client().changes(from: .beginning).changes.filter { $0.origin.idempotencyKey == key }.count
    }

    /// Created, replaced and deleted while the server is down, the app killed and reopened on its
    /// queue file: everything shows at once, survives the restart, and once the server is back is
    /// applied in order, each write once.
    @Test func itemWritesQueuedOfflineSurviveARestartAndApplyOnce() async throws {
        try await withServer { server in
            let client = try server.client()
            let path = server.clientFile("phone.sqlite")
            let keep = try await client.createItem(.named("Keep"))
            let gone = try await client.createItem(.named("Gone"))
            var writes: [QueuedWrite] = []
            let lampID = ItemID.random()
            do {
                let store = try SyncedStore(client: client, clientID: "phone", queuePath: path, options: testStoreOptions)
                store.start()
                try await waitUntil(store, "the snapshot") { $0.isLoaded && $0.connection == .online }
                await server.stop()
                try await waitUntil(store, "offline") { if case .offline = $0.connection { true } else { false } }

                writes.append(try store.createItem(.named("  Lamp "), id: lampID))
                #expect(store.itemsByID[lampID]?.name == "Lamp", "shown at once, trimmed as the server will")
                writes.append(try store.updateItem(store.itemsByID[lampID]!, with: .named("Desk lamp")))
                writes.append(try store.updateItem(keep, with: .named("Kept")))
                writes.append(try store.deleteItem(gone))
                #expect(store.items.map(\.name) == ["Kept", "Desk lamp"])
                #expect(store.itemsByID[lampID]?.version == 2 && store.itemsByID[keep.id]?.version == 2)
                store.stop()
            }

            // The app is killed and opened again: the queue file holds the four writes, in order.
            let store = try SyncedStore(client: client, clientID: "phone", queuePath: path, options: testStoreOptions)
            #expect(store.pendingWrites.map(\.idempotencyKey) == writes.map(\.idempotencyKey))
            #expect(store.pendingWrites.map(\.write) == writes.map(\.write))
            #expect(store.itemsByID[lampID]?.name == "Desk lamp", "an insert shows before any snapshot")

            try await server.start()
            store.start()
            defer { store.stop() }
            await store.waitUntilDelivered()
            try await waitUntil(store, "the server's state") { $0.pendingWrites.isEmpty && $0.failedWrites.isEmpty && $0.isLoaded }
            let serverItems = try await client.allItems()
            #expect(serverItems.map(\.name) == ["Kept", "Desk lamp"])
            #expect(serverItems.first { $0.id == lampID }?.version == 2)
            try await waitUntil(store, "the store equal to the server") { $0.items == serverItems }
            for write in writes { #expect(try await applied(server, key: write.idempotencyKey) == 1, "\(write.write.name) applied once") }
        }
    }

    /// The server applies a create and an update but their answers are lost: each is sent again
    /// with its key, the server replays its first answer, and each applies once.
    @Test func lostAnswersToItemWritesAreRetriedWithTheirKeysAndApplyOnce() async throws {
        try await withServer { server in try await withStoreBehindProxy(server) { proxy, store in
            proxy.loseNextAnswer(toRequestStartingWith: "POST /v1/items")
            let created = try store.createItem(.named("Mug"))
            try await waitUntil(store, "the create answered") { $0.pendingWrites.isEmpty }
            let id = try #require(created.write.itemID)
            proxy.loseNextAnswer(toRequestStartingWith: "PUT /v1/items/\(id)")
            let updated = try store.updateItem(store.itemsByID[id]!, with: .named("Big mug"))
            try await waitUntil(store, "the update answered") { $0.pendingWrites.isEmpty }

            #expect(proxy.droppedAnswers == 2)
            #expect(store.failedWrites.isEmpty)
            #expect(try await applied(server, key: created.idempotencyKey) == 1)
            #expect(try await applied(server, key: updated.idempotencyKey) == 1)
            let item = try await server.client().item(id)
            #expect(item.name == "Big mug" && item.version == 2)
            try await waitUntil(store, "the store has the server's item") { $0.itemsByID[id] == item }
        } }
    }

    /// An update the server refuses (its version moved on) rolls back, lands in `failedWrites`
    /// with the server's item and the typed draft, and the writes behind it go on.
    @Test func aRefusedItemWriteLandsInFailedWritesWithItsDraft() async throws {
        try await withServer { server in
            let client = try server.client()
            let item = try await client.createItem(.named("Plate"))
            let store = try SyncedStore(client: client, clientID: "phone", queue: .inMemory(), options: testStoreOptions)
            store.start()
            defer { store.stop() }
            try await waitUntil(store, "the snapshot") { $0.isLoaded && $0.itemsByID[item.id] != nil }

            // Another client writes first; this store still holds version 1.
            let theirs = try await server.client(token: server.secondEditor).updateItem(item, with: .named("Bowl"))
            let stale = try store.updateItem(item, with: .named("Dish"))
            let after = try store.createItem(.named("Cup"))
            try await waitUntil(store, "both answered") { $0.pendingWrites.isEmpty }

            let failure = try #require(store.failedWrites.first)
            #expect(store.failedWrites.count == 1 && failure.id == stale.id)
            #expect(failure.error.code == .preconditionFailed && failure.error.currentItem == theirs)
            #expect(failure.write.draft == .named("Dish"), "the draft is not lost")
            try await waitUntil(store, "the server's item shows") { $0.itemsByID[item.id] == theirs }
            #expect(try await client.item(after.write.itemID!).name == "Cup")
            store.dismissFailedWrite(failure.id)
            #expect(store.failedWrites.isEmpty)
        }
    }

    /// A queue file written before item writes (its `queuedCommand` table) opens with its commands,
    /// their ids, keys and order.
    @Test func aQueueFileOfCommandsOnlyOpensWithItsCommands() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("queue-\(UUID().uuidString).sqlite").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let commands: [Command] = [.openAdd, .updateDraft(draft: .named("Old")), .save()]
        do {
            let database = try DatabaseQueue(path: path)
            try database.write { db in
                try db.execute(
                    sql: """
                        CREATE TABLE queuedCommand (id INTEGER PRIMARY KEY AUTOINCREMENT, clientID TEXT NOT NULL, command TEXT NOT NULL,
                            idempotencyKey TEXT NOT NULL UNIQUE, enqueuedAt DOUBLE NOT NULL, attempts INTEGER NOT NULL DEFAULT 0);
                        CREATE TABLE grdb_migrations (identifier TEXT NOT NULL PRIMARY KEY);
                        INSERT INTO grdb_migrations VALUES ('v1');
                        """)
                for (index, command) in commands.enumerated() {
                    let json = String(decoding: try JSONCoding.encoder().encode(command), as: UTF8.self)
                    try db.execute(
                        sql: "INSERT INTO queuedCommand (id, clientID, command, idempotencyKey, enqueuedAt, attempts) VALUES (?, 'phone', ?, ?, 1.5, ?)",
                        arguments: [10 + index, json, "key-\(index)", index])
                }
            }
        }
        let pending = try WriteQueue(path: path).pending(for: "phone")
        #expect(pending.map(\.id) == [10, 11, 12])
        #expect(pending.map(\.write) == commands.map(Write.command))
        #expect(pending.map(\.idempotencyKey) == ["key-0", "key-1", "key-2"] && pending.map(\.attempts) == [0, 1, 2])
        let next = try WriteQueue(path: path).enqueue(.deleteItem(id: .random(), ifVersion: 3), for: "phone")
        #expect(next.id == 13)
    }

    /// A row of a kind this SDK does not know (a queue file a newer SDK wrote) is named as such,
    /// not as a payload that lacks a field.
    @Test func aQueuedWriteOfAnUnknownKindSaysSo() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("queue-\(UUID().uuidString).sqlite").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        _ = try WriteQueue(path: path).enqueue(.command(.openAdd), for: "phone")
        try DatabaseQueue(path: path).write { db in
            try db.execute(
                sql: "INSERT INTO queuedWrite (clientID, kind, payload, idempotencyKey, enqueuedAt) VALUES ('phone', 'futureKind', '{}', 'key-f', 1.5)")
        }
        #expect {
            _ = try WriteQueue(path: path).pending(for: "phone")
        } throws: { error in
            "\(error)".contains("unknown kind futureKind")
        }
    }
}
