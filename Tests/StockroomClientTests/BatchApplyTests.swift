import Foundation
import Observation
@testable import StockroomClient
import Testing

/// `apply(contentsOf:)`, what the store does with each hand-over of its feed: the state it shows
/// after a batch is the state the same events applied one at a time show.
@Suite("SyncedStore applying the feed a batch at a time")
@MainActor
struct BatchApplyTests: FeedFixtures {
    /// What a store shows, compared whole.
    struct Shown: Equatable {
        var itemsByID: ItemsByID
        var items: [Item]
        var navigation: Navigation
        var otherDevices: [Navigation]
        var cursor: FeedCursor?
        var pending: Int
    }

    func shown(_ store: SyncedStore) -> Shown {
        Shown(
            itemsByID: store.itemsByID, items: store.items, navigation: store.navigation, otherDevices: store.otherDevices, cursor: store.cursor,
            pending: store.pendingWrites.count)
    }

    /// This device saves an edit of the mug; before the save's echo, another device writes the mug
    /// (so the save, replayed on it, is a conflict), the lamp, a new item and a deletion, and a
    /// tablet moves; then the save's own item, the lamp again, and the save's navigation. The same
    /// events in batches of several sizes show, after each batch, what they show one at a time (the
    /// save's echo, in the middle of a batch, is taken on the state the changes before it make).
    @Test(arguments: [1, 2, 3, 4, 7, 100])
    func aBatchShowsWhatItsChangesShowOneAtATime(batchSize: Int) throws {
        let mug = ItemID.random()
        let lamp = ItemID.random()
        let chair = ItemID.random()
        let desk = ItemID.random()
        let editing = Navigation(
            clientID: "phone", state: NavigationState(destination: .edit(itemID: mug, baseVersion: 1, draft: .named("Big Mug"))), version: 3,
            updatedAt: at)
        let snapshot = Snapshot(
            items: [item("Mug", id: mug, version: 1), item("Lamp", id: lamp, version: 1, createdAt: 1), item("Desk", id: desk, version: 1, createdAt: 2)],
            navigation: [editing], cursor: FeedCursor(epoch: "e1", seq: 0))

        func events(saveKey: String) -> [FeedEvent] {
            let origin = Change.Origin(clientID: "phone", idempotencyKey: saveKey)
            return [
                .change(change(1, .item(item("Mug (theirs)", id: mug, version: 2)))),
                .change(change(2, .item(item("Lamp v2", id: lamp, version: 2, createdAt: 1)))),
                .change(change(3, .item(item("Chair", id: chair, version: 1, createdAt: 3)))),
                .change(deletion(4, of: desk)),
                .change(change(5, .navigation(Navigation(clientID: "tablet", state: .root, version: 1, updatedAt: at + 5)))),
                .change(change(6, .presence(Presence(clientID: "tablet", online: true, lastSeenAt: at + 5)))),
                .change(change(7, .item(item("Mug (theirs)", id: mug, version: 2)), origin: origin)),
                .change(change(8, .item(item("Lamp v3", id: lamp, version: 3, createdAt: 1)))),
                .change(change(9, .navigation(Navigation(clientID: "phone", state: editing.state, version: 4, updatedAt: at + 8)), origin: origin)),
                .progress(FeedCursor(epoch: "e1", seq: 10)),
            ]
        }

        let single = try SyncedStore(client: nowhere, clientID: "phone", queue: .inMemory())
        let batched = try SyncedStore(client: nowhere, clientID: "phone", queue: .inMemory())
        var expected: [Shown] = []
        var got: [Shown] = []
        for (store, oneAtATime) in [(single, true), (batched, false)] {
            store.apply(.snapshot(snapshot))
            _ = store.items  // A list on screen: `items` keeps its order change by change.
            let save = try store.send(.save())
            let all = events(saveKey: save.idempotencyKey)
            for start in stride(from: 0, to: all.count, by: batchSize) {
                let batch = all[start..<min(start + batchSize, all.count)]
                if oneAtATime {
                    for event in batch { store.apply(event) }
                    expected.append(shown(store))
                } else {
                    store.apply(contentsOf: batch)
                    got.append(shown(store))
                }
            }
        }
        #expect(got == expected)
        // What both show in the end: the save decided on the mug the other device wrote.
        #expect(batched.itemsByID[mug]?.name == "Mug (theirs)")
        #expect(batched.itemsByID[desk] == nil && batched.itemsByID[chair] != nil)
        #expect(batched.items.map(\.name) == ["Mug (theirs)", "Lamp v3", "Chair"])
        #expect(batched.cursor == FeedCursor(epoch: "e1", seq: 10))
        #expect(batched.otherDevices.map(\.clientID) == ["tablet"])
    }

    /// 2,000 random upserts and deletes of 100 items (and deletes of items the store never had),
    /// with or without a pending delete on top, in batches of random sizes: after each batch the
    /// store shows what one-at-a-time shows. Without a pending write a batch is shown by the short
    /// way (nothing overlaid); with one, by the whole.
    @Test(arguments: [true, false])
    func randomBatchesOfItemChangesShowWhatOneAtATimeShows(pendingDelete: Bool) throws {
        var random = SystemRandomNumberGenerator()
        let ids = (0..<100).map { _ in ItemID.random() }
        var versions: [ItemID: Int] = [:]
        var deleted: Set<ItemID> = []
        var events: [FeedEvent] = []
        for seq in 1...2_000 {
            // Ids are never reused: a deleted item stays gone.
            guard let id = ids.filter({ !deleted.contains($0) }).randomElement(using: &random) else { break }
            if Int.random(in: 0..<50, using: &random) == 0 {
                // An item created and deleted before the store's feed reached it.
                events.append(.change(deletion(seq, of: .random())))
            } else if let gone = deleted.randomElement(using: &random), Int.random(in: 0..<50, using: &random) == 0 {
                // A late upsert of a deleted item (an answer the delete overtook): it stays gone.
                events.append(.change(change(seq, .item(item("\(gone) late", id: gone, version: 1_000, createdAt: 0)))))
            } else if versions[id] != nil, Int.random(in: 0..<20, using: &random) == 0 {
                versions[id] = nil
                deleted.insert(id)
                events.append(.change(deletion(seq, of: id)))
            } else {
                let version = (versions[id] ?? 0) + 1
                versions[id] = version
                events.append(.change(change(seq, .item(item("\(id) v\(version)", id: id, version: version, createdAt: Double(seq % 7))))))
            }
        }
        let single = try SyncedStore(client: nowhere, clientID: "phone", queue: .inMemory())
        let batched = try SyncedStore(client: nowhere, clientID: "phone", queue: .inMemory())
        for store in [single, batched] {
            store.apply(.snapshot(Snapshot(items: [], navigation: [], cursor: FeedCursor(epoch: "e1", seq: 0))))
            // Pending, never delivered: shows as gone whenever the feed has the item.
            if pendingDelete { try store.deleteItem(ids[0], ifVersion: nil) }
        }
        // The server's items as the events so far say.
        var server: [ItemID: Item] = [:]
        var start = 0
        while start < events.count {
            let end = min(events.count, start + Int.random(in: 1...300, using: &random))
            for event in events[start..<end] {
                single.apply(event)
                guard case .change(let change) = event, let id = ItemID(change.id), change.item?.version != 1_000 else { continue }
                server[id] = change.item
            }
            // As the feed hands it over (a slice), as an array, and as any other sequence.
            switch Int.random(in: 0..<3, using: &random) {
            case 0: batched.apply(contentsOf: events[start..<end])
            case 1: batched.apply(contentsOf: Array(events[start..<end]))
            default: batched.apply(contentsOf: AnySequence(events[start..<end]))
            }
            // The server's items, once, with the pending delete on top.
            #expect(batched.allConfirmedItems() == ItemsByID(server.values))
            #expect(batched.itemsByID == ItemsByID(server.values.filter { !pendingDelete || $0.id != ids[0] }))
            // Read as a list on screen reads it, some batches only.
            if Bool.random(using: &random) { #expect(batched.items == single.items) }
            #expect(shown(batched) == shown(single))
            start = end
        }
        #expect(Set(batched.itemsByID.keys) == Set(versions.keys).subtracting(pendingDelete ? [ids[0]] : []))
    }

    /// A batch of item upserts with nothing pending tells the observers of `itemsByID` when it
    /// changes something, and a batch of versions the store already holds tells them nothing.
    @Test func aBatchTellsObserversOnlyWhenItChangesSomething() throws {
        final class Count: @unchecked Sendable { var value = 0 }
        let store = try SyncedStore(client: nowhere, clientID: "phone", queue: .inMemory())
        store.apply(.snapshot(Snapshot(items: [], navigation: [], cursor: FeedCursor(epoch: "e1", seq: 0))))
        let events = (1...10).map { FeedEvent.change(change($0, .item(item("Item \($0)", id: .random(), version: 1)))) }
        let count = Count()
        for expected in [1, 1] {
            withObservationTracking { _ = store.itemsByID } onChange: { count.value += 1 }
            store.apply(contentsOf: events)
            #expect(count.value == expected)
            #expect(store.itemsByID.count == 10)
            #expect(store.cursor == FeedCursor(epoch: "e1", seq: 10))
        }
    }

    /// The feed's batches from a real server: every change once and in order, none larger than 256.
    @Test func nextBatchReadsEveryChangeOnceInOrder() async throws {
        try await withServer { server in
            let client = try server.client()
            let count = 300
            for index in 0..<count { _ = try await client.createItem(.named("Item \(index)")) }
            var feed = client.feed(from: .beginning, options: FeedOptions(topics: [.items])).makeAsyncIterator()
            var changes: [Change] = []
            var largest = 0
            while changes.count < count, let batch = try await feed.nextBatch() {
                largest = max(largest, batch.count)
                for case .change(let change) in batch { changes.append(change) }
            }
            #expect(changes.map(\.seq) == Array(1...count))
            #expect(changes.compactMap(\.item?.name) == (0..<count).map { "Item \($0)" })
            #expect(largest <= 256)
        }
    }
}
