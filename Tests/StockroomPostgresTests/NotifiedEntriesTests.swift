import Foundation
import StockroomCore
@testable import StockroomPostgres
import StockroomStorage
import TestSupport
import Testing

/// A head step's entries in its notification (`NotifiedEntries`): written and read back exactly,
/// never too large for PostgreSQL, and taken by the other daemons as the table holds them.
@Suite("Entries carried in a notification")
struct NotifiedEntriesTests {
    static let pending: [PostgresWrite.Pending] = [
        PostgresWrite.Pending(
            entity: .item, op: .upsert, id: "3f2c", owner: nil, value: #"{"name":"Ünïcødé 🎹 \"x\" 12:3-"}"#,
            previous: #"{"name":"before"}"#, origin: Origin(user: "erin", clientID: "erins-phone", idempotencyKey: "k:1-2"), at: 1_796_210_439_917,
            ownerClient: nil),
        PostgresWrite.Pending(
            entity: .item, op: .delete, id: "3f2c", owner: nil, value: nil, previous: ItemBefore.unknownMark, origin: Origin(user: "erin"),
            at: 7, ownerClient: nil),
        PostgresWrite.Pending(
            entity: .navigation, op: .upsert, id: "erins-phone", owner: "erin", value: "", previous: nil,
            origin: Origin(user: "erin", clientID: "erins-phone"), at: 0, ownerClient: "erins-phone"),
    ]

    @Test
    func entriesComeBackAsTheLogsEntriesOfTheSameSeqs() throws {
        let text = try #require(NotifiedEntries.encode(Self.pending))
        let entries = try #require(NotifiedEntries.decode(text[...], head: 12, epoch: "e1"))
        let expected = Self.pending.enumerated().map { index, entry in
            ChangeEntry(
                seq: 10 + Int64(index), entity: entry.entity, op: entry.op, id: entry.id, owner: entry.owner, valueJSON: entry.value,
                before: ItemBefore(stored: entry.previous), originClientID: entry.origin.clientID,
                originIdempotencyKey: entry.origin.idempotencyKey, at: entry.at, epoch: "e1")
        }
        #expect(entries == expected)
        #expect(entries.map(\.json) == expected.map(\.json))
    }

    @Test
    func entriesTooLargeForANotificationAreNotEncoded() {
        let one = PostgresWrite.Pending(
            entity: .item, op: .upsert, id: "a", owner: nil, value: String(repeating: "é", count: 1_000), previous: nil,
            origin: Origin(user: "erin"), at: 1, ownerClient: nil)
        // 2,000 bytes each: three fit, four do not.
        #expect(NotifiedEntries.encode(Array(repeating: one, count: 3)) != nil)
        #expect(NotifiedEntries.encode(Array(repeating: one, count: 4)) == nil)
        for count in 1...4 {
            if let text = NotifiedEntries.encode(Array(repeating: one, count: count)) {
                #expect(text.utf8.count <= NotifiedEntries.budget)
            }
        }
    }

    @Test
    func aPayloadThatIsNotEntriesIsRefused() throws {
        let text = try #require(NotifiedEntries.encode(Self.pending))
        #expect(NotifiedEntries.decode(text.dropLast(), head: 3, epoch: "e1") == nil)
        #expect(NotifiedEntries.decode("4:item6:upsert", head: 1, epoch: "e1") == nil)
        #expect(NotifiedEntries.decode("4:item6:upsert1:a-----9:x", head: 1, epoch: "e1") == nil)
        #expect(NotifiedEntries.decode("4:tree6:upsert1:a-----1:1", head: 1, epoch: "e1") == nil)
        #expect(NotifiedEntries.decode("99:item", head: 1, epoch: "e1") == nil)
        #expect(NotifiedEntries.decode("4:item6:upsert1:a-----1:1", head: 1, epoch: "e1")?.map(\.seq) == [1])
    }
}

@Suite("Entries carried in a notification, across daemons", .enabled(if: TestPostgres.isAvailable, "PostgreSQL 15 is not installed"))
struct NotifiedEntriesAcrossDaemonsTests {
    static let draft = Draft(name: "Ünïcødé 🎹 \"quoted\"", color: nil, status: .inStock(quantity: 1))

    /// Every kind of head step a daemon's writes make reaches a subscribed daemon in its
    /// notification, as the table holds it; one too large for a notification is read from the
    /// table; the writing daemon's own listener takes none of its own.
    @Test(.timeLimit(.minutes(10)))
    func anotherDaemonTakesAWritesEntriesFromItsNotificationAsTheTableHoldsThem() async throws {
        try await withDaemons(2, pollInterval: .seconds(60)) { daemons, _ in
            let (a, b) = (daemons[0], daemons[1])
            try await eventually("both daemons listen") { a.isListening && b.isListening }
            let filter = FeedFilter(user: "erin", topics: [.item, .navigation])
            let subscriptions = [a.hub.subscribe(filter), b.hub.subscribe(filter)]
            defer { subscriptions.forEach { $0.cancel() } }

            let phone = ClientID(stored: "erins-phone")
            let item = try await a.createItem(id: nil, draft: Self.draft, origin: Origin(user: "erin", idempotencyKey: "create-1"), idempotency: nil).value
            _ = try await a.updateItem(
                item.id, draft: Draft(name: "Two", color: nil, status: .outOfStock(isOnBackOrder: true)), precondition: nil,
                origin: Origin(user: "erin"), idempotency: nil)
            _ = try await a.runCommand(.openEdit(itemID: item.id), clientID: phone, origin: Origin(user: "erin", clientID: phone), idempotency: nil)
            // Three creations: three entries in one head step.
            let three = (0..<3).map { BatchItem(id: nil, draft: Draft(name: "Small \($0)", color: nil, status: .inStock(quantity: $0))) }
            _ = try await a.createItems(three, origin: Origin(user: "erin"), idempotency: nil)
            _ = try await a.deleteItem(item.id, precondition: nil, origin: Origin(user: "erin"), idempotency: nil)
            let head = a.hub.head
            #expect(head >= 7)
            try await eventually("b has every entry") { b.hub.head == head }
            #expect(b.notifiedEntries.load(ordering: .relaxed) == Int(head))
            #expect(b.hub.recentChanges(after: 0, filter: filter, limit: 100)?.changes == (try await b.readLoggedChanges(after: 0, filter: nil, limit: 100).changes))

            // Forty creations in one head step are too large for a notification.
            let batch = (0..<40).map { BatchItem(id: nil, draft: Draft(name: "Item \($0) " + String(repeating: "x", count: 150), color: nil, status: .inStock(quantity: $0))) }
            _ = try await a.createItems(batch, origin: Origin(user: "erin"), idempotency: nil)
            try await eventually("b has the batch") { b.hub.head == head + 40 }
            #expect(b.notifiedEntries.load(ordering: .relaxed) == Int(head))
            #expect(b.hub.recentChanges(after: 0, filter: filter, limit: 100)?.changes == (try await b.readLoggedChanges(after: 0, filter: nil, limit: 100).changes))
            #expect(a.notifiedEntries.load(ordering: .relaxed) == 0)
        }
    }
}
