import Foundation
import Observation
import StockroomClient
import Testing

/// Following part of the inventory from the SDK, against a live server: a typed filter on the
/// feed and the store, moves in and out, progress, and a filter changed without a refetch.
@Suite("The SDK under an item filter, against a live server", .timeLimit(.minutes(10)))
@MainActor
struct FilteredStoreTests {
    @Test(arguments: testedTransports)
    func aStoreFollowsItsFilterThroughMovesAndChangesItWithoutARefetch(over transport: FeedTransport) async throws {
        try await withServer { server in
            let client = try server.client()
            let a = try await client.createItem(.named("Cable", quantity: 1))
            let b = try await client.createItem(.named("Lamp", quantity: 4))
            let c = try await client.createItem(.named("Mug", quantity: 8))
            var options = testStoreOptions(transport)
            options.feed.filter = try ItemFilter(parsing: "quantity <= 5")
            let store = try SyncedStore(client: client, clientID: "phone", queue: .inMemory(), options: options)
            store.start()
            defer { store.stop() }
            try await waitUntil(store, "the filtered snapshot") { $0.isLoaded && Set($0.itemsByID.keys) == [a.id, b.id] }

            // Out of the filter and back in: the item leaves, then shows again (it was not deleted).
            _ = try await client.updateItem(a.id, with: .named("Cable", quantity: 9), ifVersion: nil)
            try await waitUntil(store, "a moved out") { $0.itemsByID[a.id] == nil }
            let back = try await client.updateItem(a.id, with: .named("Cable", quantity: 2), ifVersion: nil)
            try await waitUntil(store, "a moved back in") { $0.itemsByID[a.id] == back }

            // Another filter in place: the store then holds exactly what a fresh snapshot under it holds.
            let next = try ItemFilter(parsing: "quantity >= 2")
            try await store.setFilter(next)
            let fresh = try await client.snapshot(filter: next)
            #expect(store.filter == next)
            #expect(store.itemsByID == ItemsByID(fresh.items))
            #expect(Set(store.itemsByID.keys) == [a.id, b.id, c.id] && store.resyncCount == 0)

            // And the feed goes on under it: c leaves, a new matching item arrives.
            _ = try await client.updateItem(c.id, with: .named("Mug", quantity: 1), ifVersion: nil)
            let d = try await client.createItem(.named("Desk", quantity: 3))
            try await waitUntil(store, "c out, d in") { $0.itemsByID[c.id] == nil && $0.itemsByID[d.id] == d }
        }
    }

    @Test(arguments: testedTransports)
    func aFilteredFeedSaysWhereItIsWhileTheFilterHidesEverything(over transport: FeedTransport) async throws {
        try await withServer { server in
            let client = try server.client()
            var options = testFeedOptions(transport)
            options.filter = try ItemFilter(parsing: #"name = "nothing""#)
            var events = client.feed(from: .snapshot, options: options).makeAsyncIterator()
            guard case .snapshot(let snapshot)? = try await events.next() else {
                Issue.record("no snapshot first")
                return
            }
            #expect(snapshot.items.isEmpty)
            let created = try await client.createItem(.named("Lamp"))
            while let event = try await events.next() {
                if case .change(let change) = event { Issue.record("a hidden change arrived: \(change.id)") }
                if case .progress(let cursor) = event {
                    #expect(cursor.seq == snapshot.cursor.seq + 1, "past the hidden create of \(created.id)")
                    break
                }
            }
        }
    }

    /// A save that takes the item out of the store's filter: the answer does not put it back in
    /// the store, whichever of the answer and the feed's move out comes first.
    /// A filter changed in place keeps the store's other topics: a device's navigation that
    /// committed after the store's cursor, and that its feed had not yet applied, is not skipped
    /// by the jump to the refilter's cursor.
    @Test func aFilterChangedInPlaceKeepsTheNavigationWrittenMeanwhile() async throws {
        try await withServer { server in
            let client = try server.client()
            _ = try await client.createItem(.named("Cable", quantity: 3))
            let store = try SyncedStore(client: client, clientID: "phone", queue: .inMemory(), options: testStoreOptions)
            store.start()
            defer { store.stop() }
            try await waitUntil(store, "the snapshot") { $0.isLoaded && $0.connection == .online }

            // The laptop's command commits while this actor is held, so the store's feed cannot
            // apply it before the filter changes (which cancels that feed at once).
            let committed = DispatchSemaphore(value: 0)
            Task.detached {
                _ = try? await client.send(.selectTab(tab: .settings), from: "laptop")
                committed.signal()
            }
            committed.wait()
            try await store.setFilter(try ItemFilter(parsing: "quantity >= 1"))
            try await waitUntil(store, timeout: .seconds(20), "the laptop's tab") { $0.device("laptop")?.state.tab == .settings }
        }
    }

    /// A store stopped while its filter changes stays stopped: the refilter's answer does not
    /// start a feed again.
    @Test func aStoreStoppedWhileItsFilterChangesStaysStopped() async throws {
        try await withServer { server in
            let client = try server.client()
            _ = try await client.createItem(.named("Cable", quantity: 3))
            let store = try SyncedStore(client: client, clientID: "phone", queue: .inMemory(), options: testStoreOptions)
            store.start()
            try await waitUntil(store, "the snapshot") { $0.isLoaded && $0.connection == .online }
            let change = Task { try await store.setFilter(try ItemFilter(parsing: "quantity >= 1")) }
            await Task.yield()
            store.stop()
            _ = await change.result
            // A feed started again would mark the store connecting, then online, on this actor.
            for _ in 0..<100 { await Task.yield() }
            let later = try await client.createItem(.named("Lamp", quantity: 4))
            try await Task.sleep(for: .milliseconds(500))
            #expect(store.connection == .idle)
            #expect(store.itemsByID[later.id] == nil)
        }
    }

    @Test func anAnswerDoesNotBringBackAnItemOutsideTheFilter() async throws {
        try await withServer { server in
            let client = try server.client()
            let cable = try await client.createItem(.named("Cable", quantity: 1))
            var options = testStoreOptions
            options.feed.filter = try ItemFilter(parsing: "quantity <= 5")
            let store = try SyncedStore(client: client, clientID: "phone", queue: .inMemory(), options: options)
            store.start()
            defer { store.stop() }
            try await waitUntil(store, "the filtered snapshot") { $0.itemsByID[cable.id] != nil }
            try store.send(.openEdit(itemID: cable.id))
            try store.editDraft { $0.status = .inStock(quantity: 9) }
            let saved = try await store.perform(.save())
            #expect(saved.item?.status == .inStock(quantity: 9))
            #expect(store.itemsByID[cable.id] == nil, "the answer's item does not match the filter")
            // The feed's move out (after the save's entries) changes nothing more.
            let head = try await client.changes(from: .now, limit: 1).cursor
            try await waitUntil(store, "the feed past the save") { ($0.cursor?.seq ?? 0) >= head.seq }
            #expect(store.itemsByID[cable.id] == nil)
        }
    }
}
