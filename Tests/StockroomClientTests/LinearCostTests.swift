import Foundation
@testable import StockroomClient
import Testing

/// What the store's costs grow with: a drain replays each pending command a bounded number of
/// times, and a change moves one item or device instead of re-sorting them all.
@Suite("SyncedStore's costs stay linear", .timeLimit(.minutes(10)))
@MainActor
struct LinearCostTests: FeedFixtures {
    /// 1,000 commands queued offline, then delivered one by one: a rebase after every answer
    /// would replay the ones still pending each time (about 500,000 replays); the store replays
    /// each a few times, and ends equal to the server.
    @Test func drainingAThousandQueuedWritesReplaysEachAFewTimes() async throws {
        try await withServer { server in
            let client = try server.client()
            let store = try SyncedStore(client: client, clientID: "phone", queue: .inMemory(), options: testStoreOptions)
            let count = 1_000
            try store.send(.openAdd)
            for index in 1..<(count - 1) { try store.editDraft { $0.name = "Draft \(index)" } }
            try store.send(.save())
            #expect(store.pendingWrites.count == count)
            #expect(store.items.map(\.name) == ["Draft \(count - 2)"], "the optimistic insert shows at once")

            let before = store.replayCount
            store.start()
            defer { store.stop() }
            await store.waitUntilDelivered()
            try await waitUntil(store, "every command answered") { $0.pendingWrites.isEmpty && $0.navigation.version == count }
            let replays = store.replayCount - before
            #expect(replays <= 4 * count, "\(replays) replays to drain \(count) commands")
            #expect(store.failedWrites.isEmpty)

            let serverItems = try await client.allItems()
            #expect(serverItems.map(\.name) == ["Draft \(count - 2)"])
            try await waitUntil(store, "the server's item") { $0.items == serverItems }
            #expect(store.navigation == (try await client.navigation(of: "phone")))
        }
    }


    func change(_ seq: Int, _ entity: Change.Entity, id: String, _ value: Change.Value?) -> Change {
        Change(
            seq: seq, cursor: FeedCursor(epoch: "e1", seq: Int64(seq)), entity: entity, operation: value == nil ? .delete : .upsert, id: id,
            value: value, origin: .init(clientID: nil, idempotencyKey: nil), at: at)
    }

    /// A catch-up of many new items, one change at a time (in batches of one, or each through
    /// `apply(_:)` and a rebase): the store that knows where the catch-up ends (`.connected(head:)`)
    /// makes room for them in a few steps, where a dictionary doubling alone moves its entries at
    /// every doubling; and it ends no larger than a doubling leaves it.
    @Test(arguments: [false, true])
    func aCatchUpMakesRoomForItsItemsInAFewSteps(eachThroughARebase: Bool) throws {
        let count = 20_000
        func growths(head: FeedCursor?) throws -> (steps: Int, capacity: Int) {
            let store = try SyncedStore(client: nowhere, clientID: "phone", queue: .inMemory())
            store.apply(.snapshot(Snapshot(items: [], navigation: [], cursor: FeedCursor(epoch: "e1", seq: 0))))
            store.apply(contentsOf: [.connected(head: head)])
            var capacity = store.itemsByID.capacity
            var steps = 0
            for seq in 1...count {
                let event = FeedEvent.change(change(seq, .item(item("Item \(seq)", id: .random(), version: 1))))
                if eachThroughARebase { store.apply(event) } else { store.apply(contentsOf: [event]) }
                if store.itemsByID.capacity != capacity { steps += 1 }
                capacity = store.itemsByID.capacity
            }
            #expect(store.itemsByID.count == count)
            #expect(store.cursor == FeedCursor(epoch: "e1", seq: Int64(count)))
            return (steps, capacity)
        }
        let doubling = try growths(head: nil)
        let toTheHead = try growths(head: FeedCursor(epoch: "e1", seq: Int64(count)))
        // The head far ahead (the log's other entries were not new items): the factor bounds the room.
        let farAhead = try growths(head: FeedCursor(epoch: "e1", seq: Int64(count * 50)))
        // A head at the end of the seqs (a server that says anything) makes no more room than that.
        let atTheEnd = try growths(head: FeedCursor(epoch: "e1", seq: .max))
        // A head of another epoch (another database) says nothing about this catch-up.
        let otherEpoch = try growths(head: FeedCursor(epoch: "e2", seq: Int64(count)))
        #expect(toTheHead.steps * 2 < doubling.steps, "\(toTheHead.steps) steps against \(doubling.steps)")
        #expect(farAhead.steps * 2 < doubling.steps, "\(farAhead.steps) steps against \(doubling.steps)")
        #expect(otherEpoch.steps == doubling.steps)
        #expect(toTheHead.capacity <= doubling.capacity)
        #expect(farAhead.capacity <= 2 * doubling.capacity)
        #expect(atTheEnd == farAhead)
    }

    /// A catch-up that updates the items the store holds makes no room, even with the dictionary
    /// full: only a new item, arriving at a full dictionary, grows it.
    @Test(arguments: [false, true])
    func aCatchUpOfUpdatesLeavesTheItemsAsLarge(eachThroughARebase: Bool) throws {
        let store = try SyncedStore(client: nowhere, clientID: "phone", queue: .inMemory())
        // 768 items fill a dictionary made for them (1,024 buckets, three quarters used).
        let held = (0..<768).map { item("Item \($0)", id: .random(), version: 1) }
        store.apply(.snapshot(Snapshot(items: held, navigation: [], cursor: FeedCursor(epoch: "e1", seq: 0))))
        store.apply(contentsOf: [.connected(head: FeedCursor(epoch: "e1", seq: 1_000_000))])
        let capacity = store.itemsByID.capacity
        try #require(capacity == held.count, "the snapshot's items fill the dictionary")
        for (index, seq) in (1...5_000).enumerated() {
            let known = held[index % held.count]
            let event = FeedEvent.change(change(seq, .item(item("\(known.name) v\(seq)", id: known.id, version: seq + 1))))
            if eachThroughARebase { store.apply(event) } else { store.apply(contentsOf: [event]) }
        }
        #expect(store.itemsByID.count == held.count)
        #expect(store.itemsByID.capacity == capacity)
        let lastOfFirst = (4_999 / held.count) * held.count + 1
        #expect(store.itemsByID[held[0].id]?.name == "Item 0 v\(lastOfFirst)")
    }

    /// 2,000 random inserts, updates and deletes (many of one creation time, so arrival breaks the
    /// tie) keep `items` in order without a second sort.
    @Test func itemChangesMoveOneItemAndKeepTheOrder() throws {
        var random = SystemRandomNumberGenerator()
        let store = try SyncedStore(client: nowhere, clientID: "phone", queue: .inMemory())
        var arrivals: [ItemID] = []
        let initial = (0..<50).map { index in
            Item(
                id: .random(), name: "Item \(index)", color: nil, status: .inStock(quantity: 1), version: 1,
                createdAt: at + Double(Int.random(in: 0..<10, using: &random)), updatedAt: at)
        }
        arrivals = initial.map(\.id)
        store.apply(.snapshot(Snapshot(items: initial, navigation: [], cursor: FeedCursor(epoch: "e1", seq: 0))))
        _ = store.items
        var live = Dictionary(uniqueKeysWithValues: initial.map { ($0.id, $0) })
        for seq in 1...2_000 {
            let roll = Int.random(in: 0..<10, using: &random)
            if roll < 4 || live.isEmpty {
                let item = Item(
                    id: .random(), name: "New \(seq)", color: nil, status: .inStock(quantity: 1), version: 1,
                    createdAt: at + Double(Int.random(in: 0..<10, using: &random)), updatedAt: at)
                arrivals.append(item.id)
                live[item.id] = item
                store.apply(.change(change(seq, .item, id: item.id.description, .item(item))))
            } else if roll < 8 {
                var item = live.values.randomElement(using: &random)!
                item.version += 1
                item.name = "Renamed \(seq)"
                live[item.id] = item
                store.apply(.change(change(seq, .item, id: item.id.description, .item(item))))
            } else {
                let id = live.keys.randomElement(using: &random)!
                live.removeValue(forKey: id)
                store.apply(.change(change(seq, .item, id: id.description, nil)))
            }
            let order = Dictionary(uniqueKeysWithValues: arrivals.enumerated().map { ($1, $0) })
            let expected = live.values.sorted { ($0.createdAt, order[$0.id]!) < ($1.createdAt, order[$1.id]!) }
            #expect(store.items == expected, "after change \(seq)")
            if store.items != expected { return }
        }
        #expect(store.itemSorts == 1, "one sort, at the first read")
    }

    /// A catch-up nobody reads in between numbers its arrivals in a list, not in the table by id;
    /// the first read of `items` orders ties of creation time by them, as reads after each change
    /// would. An item that left the filter and came back arrives again (after the others of its
    /// time), and however often it does, the list stays bounded by the items' count.
    @Test func arrivalsNobodyReadStillOrderTheNextRead() throws {
        let store = try SyncedStore(client: nowhere, clientID: "phone", queue: .inMemory())
        store.apply(.snapshot(Snapshot(items: [], navigation: [], cursor: FeedCursor(epoch: "e1", seq: 0))))
        let created = (0..<3_000).map { index in
            Item(
                id: .random(), name: "Item \(index)", color: nil, status: .inStock(quantity: 1), version: 1, createdAt: at + Double(index % 3),
                updatedAt: at)
        }
        store.apply(contentsOf: created.enumerated().map { .change(change($0 + 1, .item, id: $1.id.description, .item($1))) })
        #expect(store.arrival.isEmpty, "nothing read yet: no table of arrivals")
        let byArrival = created.enumerated().sorted { ($0.element.createdAt, $0.offset) < ($1.element.createdAt, $1.offset) }.map(\.element)
        #expect(store.items == byArrival)

        // The first item leaves the filter and comes back 10,000 times (more than the list's bound for
        // 3,000 items), read only at the end.
        var seq = created.count
        var returning = created[0]
        for _ in 0..<10_000 {
            seq += 1
            store.apply(.change(Change(
                seq: seq, cursor: FeedCursor(epoch: "e1", seq: Int64(seq)), entity: .item, operation: .delete, move: .out,
                id: returning.id.description, value: nil, origin: .init(clientID: nil, idempotencyKey: nil), at: at)))
            seq += 1
            returning.version += 1
            store.apply(.change(change(seq, .item, id: returning.id.description, .item(returning))))
            #expect(store.unindexedArrivals.count <= 2 * (store.itemsByID.count + 1_024) + 1)
        }
        var expected = byArrival.filter { $0.id != returning.id }
        let lastOfItsTime = expected.lastIndex { $0.createdAt == returning.createdAt }!
        expected.insert(returning, at: lastOfItsTime + 1)
        #expect(store.items == expected)
    }

    /// 1,000 random changes of 20 other devices keep `otherDevices` most recent first.
    @Test func deviceChangesMoveOneDeviceAndKeepTheOrder() throws {
        var random = SystemRandomNumberGenerator()
        let store = try SyncedStore(client: nowhere, clientID: "phone", queue: .inMemory())
        store.apply(.snapshot(Snapshot(items: [], navigation: [], cursor: FeedCursor(epoch: "e1", seq: 0))))
        var live: [ClientID: Navigation] = [:]
        for seq in 1...1_000 {
            let id = ClientID("device-\(Int.random(in: 0..<20, using: &random))")!
            if Int.random(in: 0..<10, using: &random) == 0 {
                live.removeValue(forKey: id)
                store.apply(.change(change(seq, .navigation, id: id.rawValue, nil)))
            } else {
                let navigation = Navigation(
                    clientID: id, state: .root, version: (live[id]?.version ?? 0) + 1,
                    updatedAt: at + Double(Int.random(in: 0..<50, using: &random)))
                live[id] = navigation
                store.apply(.change(change(seq, .navigation, id: id.rawValue, .navigation(navigation))))
            }
            let expected = live.values.sorted(by: SyncedStore.shownBefore)
            #expect(store.otherDevices == expected, "after change \(seq)")
            if store.otherDevices != expected { return }
        }
    }
}
