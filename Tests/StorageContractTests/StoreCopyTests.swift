import Foundation
import StockroomCore
import StockroomPostgres
import StockroomStorage
import StockroomStore
import StockroomWire
import TestSupport
import Testing

/// `stockroom migrate --from-sqlite`: a SQLite store copied into PostgreSQL serves the same items,
/// navigation, tokens, replays and change log, byte for byte, under the same epoch (or a new one).
@Suite("Copy from SQLite into PostgreSQL", .enabled(if: TestPostgres.isAvailable, "PostgreSQL 15 is not installed"))
struct StoreCopyTests {
    static let erin = Origin(user: "erin", clientID: "phone")
    static let everything = FeedFilter(user: "erin", topics: [.item, .navigation])

    @Test(.timeLimit(.minutes(10)))
    func aCopyServesTheSameStoreAndItsCursors() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("stockroom-copy-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let sqlite = try AppDatabase.open(path: folder.appendingPathComponent("stockroom.sqlite").path)

        // A store with some history: items created, changed and deleted, a trimmed log, navigation on
        // two devices with a draft (text with a tab, a newline and a backslash), tokens (one revoked),
        // an idempotent request.
        var ids: [ItemID] = []
        for index in 0..<12 {
            let draft = Draft(
                name: "Item \(index)", color: index.isMultiple(of: 3) ? Color(name: "Teal", red: 0.1, green: 0.5, blue: 0.5) : nil,
                status: index.isMultiple(of: 2) ? .inStock(quantity: index) : .outOfStock(isOnBackOrder: index.isMultiple(of: 3)))
            ids.append(try await sqlite.createItem(id: nil, draft: draft, origin: Self.erin, idempotency: nil).value.id)
        }
        _ = try await sqlite.updateItem(ids[1], draft: Draft(name: "Renamed with a \\ backslash", color: nil, status: .inStock(quantity: 5)),
            precondition: nil, origin: Self.erin, idempotency: nil)
        _ = try await sqlite.deleteItem(ids[2], precondition: nil, origin: Self.erin, idempotency: nil)
        #expect(try await sqlite.trimChanges(maxAge: .seconds(3600), maxEntries: 8) > 0)
        _ = try await sqlite.runCommand(.openEdit(itemID: ids[3]), clientID: "phone", origin: Self.erin, idempotency: nil)
        let typed = Draft(name: "Tab\there\nand \\ backslash", color: nil, status: .inStock(quantity: 7))
        _ = try await sqlite.runCommand(.updateDraft(draft: typed), clientID: "phone", origin: Self.erin, idempotency: nil)
        _ = try await sqlite.runCommand(.push(route: .item(id: ids[4])), clientID: "tablet", origin: Origin(user: "erin", clientID: "tablet"), idempotency: nil)
        let kept = try await sqlite.createToken(user: "erin", role: .editor)
        let revoked = try await sqlite.createToken(user: "otto", role: .viewer)
        #expect(try await sqlite.revokeToken(id: revoked.info.id))
        let key = IdempotencyKey(user: "erin", scope: .items, key: "k1")
        let request = IdempotentRequest<Item>(key: key, fingerprint: "POST\t/v1/items\n{\"name\": \"Keyboard\"}\r\n") { result in
            guard case .success(let item) = result else { return nil }
            return StoredResponse(bytes: Array("created \(item.id)\twith a tab".utf8))
        }
        let keyed = Origin(user: "erin", clientID: nil, idempotencyKey: "k1")
        let draft = Draft(name: "Keyboard", color: nil, status: .inStock(quantity: 1))
        _ = try await sqlite.createItem(id: nil, draft: draft, origin: keyed, idempotency: request)

        let url = try PostgresURL(try await TestPostgres.shared().newDatabase())
        let summary = try await PostgresStore.importCopy(from: try sqlite.copySource(), into: url, newEpoch: false)
        #expect(summary.epoch == sqlite.epoch && summary.head == sqlite.hub.head)
        #expect(summary.rows[.items] == 13 && summary.rows[.tokens] == 2 && summary.rows[.clients] == 2)

        let postgres = try await PostgresStore.open(url: url, deadline: TestPostgres.storeDeadline)
        let running = Task { try await postgres.run() }
        defer { running.cancel() }
        #expect(postgres.epoch == sqlite.epoch)
        // The log, byte for byte, from the trim watermark on; cursors from SQLite resolve the same.
        let trimmed = sqlite.hub.trimmedThrough
        #expect(trimmed > 0)
        let before = try await sqlite.readEncodedChanges(after: trimmed, filter: Self.everything, limit: 100)
        let after = try await postgres.readEncodedChanges(after: trimmed, filter: Self.everything, limit: 100)
        #expect(after == before && after.count > 0)
        let cursor = FeedStart.after(FeedCursor(epoch: sqlite.epoch, seq: trimmed + 1))
        #expect(try await postgres.resolve(cursor) == sqlite.resolve(cursor))
        await #expect(throws: StoreError.self) { try await postgres.resolve(.after(FeedCursor(epoch: sqlite.epoch, seq: trimmed - 1))) }
        // Items, tombstones, navigation with its draft.
        let allItems = { (storage: any Storage) in try await storage.listItems(after: nil, limit: 100, query: nil, status: nil).items }
        #expect(try await allItems(postgres) == allItems(sqlite))
        #expect(try await postgres.item(ids[2]) == nil)
        #expect(await failure { try await postgres.createItem(id: ids[2], draft: draft, origin: Self.erin, idempotency: nil) } == .alreadyExists(ids[2]))
        #expect(try await postgres.navigations(user: "erin") == sqlite.navigations(user: "erin"))
        #expect(try await postgres.navigation(clientID: "phone", user: "erin").state.destination?.draft == typed)
        // Tokens by their secrets; the replay of the keyed request.
        #expect(try await postgres.authenticate(secret: kept.secret)?.id == kept.info.id)
        #expect(try await postgres.authenticate(secret: revoked.secret) == nil)
        guard case .replayed(let stored) = try await postgres.createItem(id: nil, draft: draft, origin: keyed, idempotency: request) else {
            Issue.record("the keyed request ran again on PostgreSQL")
            return
        }
        #expect(String(decoding: stored.bytes, as: UTF8.self).hasSuffix("\twith a tab"))
        // New writes continue the log and the items' order.
        let next = try await postgres.createItem(id: nil, draft: draft, origin: Self.erin, idempotency: nil).value
        #expect(try await postgres.resolve(.now) == summary.head + 1)
        #expect(try await allItems(postgres).last == next)
        // A second copy into the same database is refused, and writes nothing.
        await #expect(throws: PostgresStoreError.self) {
            try await PostgresStore.importCopy(from: try sqlite.copySource(), into: url, newEpoch: false)
        }
        #expect(try await postgres.resolve(.now) == summary.head + 1)

        // With a new epoch, every SQLite cursor is refused.
        let fresh = try PostgresURL(try await TestPostgres.shared().newDatabase())
        let renewed = try await PostgresStore.importCopy(from: try sqlite.copySource(), into: fresh, newEpoch: true)
        #expect(renewed.epoch != sqlite.epoch && renewed.head == summary.head)
    }
}
