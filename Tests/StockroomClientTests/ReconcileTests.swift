import Foundation
import Observation
@testable import StockroomClient
import Testing

/// The store's reconciliation, fed by hand with the events its feed would deliver (no server:
/// the client points at a port where nothing listens, and the store is never started).
@Suite("SyncedStore reconciliation, event by event")
@MainActor
struct ReconcileTests: FeedFixtures {
    @Test func ownEchoesArrivingBeforeTheAnswerNeverFlickerTheOptimisticSave() throws {
        let id = ItemID.random()
        let original = item("Mug", id: id, version: 1)
        let editing = Navigation(
            clientID: "phone", state: NavigationState(destination: .edit(itemID: id, baseVersion: 1, draft: .named("Big Mug"))), version: 3,
            updatedAt: at)
        let store = try SyncedStore(client: nowhere, clientID: "phone", queue: .inMemory())
        store.apply(.snapshot(Snapshot(items: [original], navigation: [editing], cursor: FeedCursor(epoch: "e1", seq: 0))))

        let save = try store.send(.save())
        #expect(store.navigation.state.destination == nil)
        #expect(store.itemsByID[id]?.name == "Big Mug")

        // The save's transaction, echoed by the feed before the answer: first the item ...
        let origin = Change.Origin(clientID: "phone", idempotencyKey: save.idempotencyKey)
        let saved = Item(id: id, name: "Big Mug", color: nil, status: .inStock(quantity: 1), version: 2, createdAt: at, updatedAt: at + 1)
        store.apply(.change(change(1, .item(saved), origin: origin)))
        #expect(store.navigation.state.destination == nil, "the item's echo does not turn the pending save into a conflict")
        #expect(store.itemsByID[id] == saved, "the server's item wins")

        // ... then this device's navigation, the last entry of the transaction.
        let closed = Navigation(clientID: "phone", state: .root, version: 4, updatedAt: at + 1)
        store.apply(.change(change(2, .navigation(closed), origin: origin)))
        #expect(store.navigation == closed)
        #expect(store.items == [saved])
        // Still queued until its own answer comes (which the server replays if it was lost).
        #expect(store.pendingWrites.map(\.id) == [save.id])
    }

    @Test func anotherDevicesWriteUnderAPendingEditShowsAndTheStaleSaveIsNotPredicted() throws {
        let id = ItemID.random()
        let store = try SyncedStore(client: nowhere, clientID: "phone", queue: .inMemory())
        // The server has this device's edit open on version 1.
        let editing = Navigation(
            clientID: "phone", state: NavigationState(destination: .edit(itemID: id, baseVersion: 1, draft: .named("Mug"))), version: 1,
            updatedAt: at)
        store.apply(.snapshot(Snapshot(items: [item("Mug", id: id, version: 1)], navigation: [editing], cursor: FeedCursor(epoch: "e1", seq: 0))))
        try store.editDraft { $0.name = "Cup" }
        #expect(store.draft?.name == "Cup")

        let theirs = item("Beaker", id: id, version: 2)
        store.apply(.change(change(1, .item(theirs), origin: .init(clientID: "laptop", idempotencyKey: "k"))))
        #expect(store.itemsByID[id] == theirs)
        #expect(store.draft?.name == "Cup", "the typed draft stays")

        // The edit is open on version 1, so a save is a conflict: nothing is predicted, and the editor
        // stays open until the server says.
        try store.send(.save())
        #expect(store.navigation.state.destination == .edit(itemID: id, baseVersion: 1, draft: .named("Cup")))
        #expect(store.itemsByID[id] == theirs)
    }

    @Test func aLateAnswerOrChangeDoesNotUndoNewerState() throws {
        let id = ItemID.random()
        let store = try SyncedStore(client: nowhere, clientID: "phone", queue: .inMemory())
        store.apply(.snapshot(Snapshot(items: [item("v3", id: id, version: 3)], navigation: [], cursor: FeedCursor(epoch: "e1", seq: 0))))
        store.apply(.change(change(1, .item(item("v2", id: id, version: 2)))))
        #expect(store.itemsByID[id]?.name == "v3", "an older version never replaces a newer one")
        store.apply(
            .change(Change(seq: 2, cursor: FeedCursor(epoch: "e1", seq: 2), entity: .item, operation: .delete, id: id.description, value: nil,
                           origin: .init(clientID: nil, idempotencyKey: nil), at: at)))
        store.apply(.change(change(3, .item(item("v4", id: id, version: 4)))))
        #expect(store.itemsByID[id] == nil, "a deleted id stays deleted (ids are never reused)")
        #expect(store.cursor == FeedCursor(epoch: "e1", seq: 3))
    }

    /// With nothing pending, an item upsert applied on its own goes straight into `itemsByID`, as a
    /// batch's do: its observers are told only when it changes something (not for a version the
    /// store holds, an older one, or a deleted id), a list read between changes keeps its order,
    /// and the cursor moves with every change.
    @Test func anUpsertAppliedAloneTellsObserversOnlyWhenItChangesSomething() throws {
        final class Fired: @unchecked Sendable { var value = 0 }
        let store = try SyncedStore(client: nowhere, clientID: "phone", queue: .inMemory())
        store.apply(.snapshot(Snapshot(items: [], navigation: [], cursor: FeedCursor(epoch: "e1", seq: 0))))
        let lamp = ItemID.random()
        let mug = ItemID.random()
        let steps: [(change: Change, changesItems: Bool)] = [
            (change(1, .item(item("Lamp", id: lamp, version: 1, createdAt: 5))), true),
            (change(2, .item(item("Mug", id: mug, version: 1, createdAt: 1))), true),
            (change(3, .item(item("Lamp", id: lamp, version: 1, createdAt: 5))), false),
            (change(4, .item(item("Lamp v2", id: lamp, version: 2, createdAt: 5))), true),
            (change(5, .item(item("Lamp v1 again", id: lamp, version: 1, createdAt: 5))), false),
            (deletion(6, of: mug), true),
            (change(7, .item(item("Mug late", id: mug, version: 9, createdAt: 1))), false),
        ]
        var names: [[String]] = []
        for step in steps {
            let fired = Fired()
            withObservationTracking { _ = store.itemsByID } onChange: { fired.value += 1 }
            store.apply(.change(step.change))
            #expect(fired.value == (step.changesItems ? 1 : 0), "seq \(step.change.seq)")
            #expect(store.cursor == step.change.cursor)
            names.append(store.items.map(\.name))
        }
        #expect(names == [["Lamp"], ["Mug", "Lamp"], ["Mug", "Lamp"], ["Mug", "Lamp v2"], ["Mug", "Lamp v2"], ["Lamp v2"], ["Lamp v2"]])
        #expect(Array(store.itemsByID.keys) == [lamp])
    }

    /// A command answered while the first snapshot was on its way: the snapshot, read before it,
    /// must not show the older state; after a 410 the snapshot replaces everything.
    @Test func aFirstSnapshotKeepsNewerStateButAResyncReplacesIt() throws {
        let id = ItemID.random()
        let store = try SyncedStore(client: nowhere, clientID: "laptop", queue: .inMemory())
        let saved = Navigation(clientID: "laptop", state: .root, version: 2, updatedAt: at)
        let editing = Navigation(
            clientID: "laptop", state: NavigationState(destination: .edit(itemID: id, baseVersion: 1, draft: .named("Mug"))), version: 1,
            updatedAt: at)
        store.apply(.change(change(5, .navigation(saved))))
        store.apply(.change(change(6, .item(item("Mug v2", id: id, version: 2)))))
        store.apply(.snapshot(Snapshot(items: [item("Mug", id: id, version: 1)], navigation: [editing], cursor: FeedCursor(epoch: "e1", seq: 4))))
        #expect(store.navigation == saved)
        #expect(store.items.map(\.name) == ["Mug v2"])

        store.apply(.resync(Snapshot(items: [item("Restored", id: id, version: 1)], navigation: [editing], cursor: FeedCursor(epoch: "e2", seq: 1))))
        #expect(store.navigation == editing)
        #expect(store.items.map(\.name) == ["Restored"])
        #expect(store.resyncCount == 1)
    }

    @Test func continueFromAnotherDeviceIsOptimisticDraftIncluded() throws {
        let id = ItemID.random()
        let phone = Navigation(
            clientID: "phone", state: NavigationState(path: [.item(id: id)], destination: .edit(itemID: id, baseVersion: 1, draft: .named("Half typ"))),
            version: 7, updatedAt: at)
        let store = try SyncedStore(client: nowhere, clientID: "laptop", queue: .inMemory())
        store.apply(.snapshot(Snapshot(items: [item("Mug", id: id, version: 1)], navigation: [phone], cursor: FeedCursor(epoch: "e1", seq: 0))))
        #expect(store.otherDevices == [phone])
        try store.continue(from: "phone")
        #expect(store.navigation.state == phone.state)
        #expect(store.pendingWrites.map(\.command) == [.restore(fromClientID: "phone")])
    }

    /// The new commands apply optimistically with the server's own transition: a deep link opens
    /// its screen at once, a checkpoint is set and returned to, and an alert's button is a command.
    @Test func deepLinksCheckpointsAndAlertButtonsApplyAtOnce() throws {
        let mug = item("Mug", id: .random(), version: 2)
        let store = try SyncedStore(client: nowhere, clientID: "phone", queue: .inMemory())
        store.apply(.snapshot(Snapshot(items: [mug], navigation: [], cursor: FeedCursor(epoch: "e1", seq: 0))))

        try store.send(.openURL(url: "stockroom://inventory/items/\(mug.id)/delete"))
        #expect(store.navigation.state.path == [.item(id: mug.id)])
        let alert = try #require(store.alert)
        #expect(alert.title.args == ["Mug"])
        #expect(store.navigation.state.url == "stockroom://inventory/items/\(mug.id)/delete")
        // The cancel-role button closes it, as the server would.
        try store.press(try #require(alert.buttons.first { $0.role == .cancel }))
        #expect(store.alert == nil)

        try store.send(.setCheckpoint(name: "detail"))
        try store.send(.openEdit(itemID: mug.id))
        #expect(store.draft == mug.draft)
        try store.send(.returnToCheckpoint(name: "detail", value: .string("picked")))
        #expect(store.draft == nil)
        #expect(store.navigation.state.checkpoints == ["detail": Checkpoint(depth: 1, value: .string("picked"))])
        #expect(store.pendingWrites.map(\.write.name) == ["openURL", "cancel", "setCheckpoint", "openEdit", "returnToCheckpoint"])
    }
}

@Suite("Server-Sent Events parsing")
struct SSEParsingTests {
    @Test func eventsCommentsAndLineEndingsFollowTheSpecification() {
        var parser = SSEParser()
        let stream = ": open\n\nid: c1.e.1\r\nevent: change\r\ndata: {\"a\":\r\ndata: 1}\r\n\r\n: heartbeat\r\rdata:plain\n\n"
        var outputs: [SSEParser.Output] = []
        // Fed in pieces that split lines and line endings anywhere.
        let bytes = Array(stream.utf8)
        for start in stride(from: 0, to: bytes.count, by: 5) {
            outputs += parser.feed(bytes[start..<min(start + 5, bytes.count)])
        }
        #expect(
            outputs == [
                .comment("open"),
                .event(id: "c1.e.1", name: "change", data: "{\"a\":\n1}"),
                .comment("heartbeat"),
                .event(id: nil, name: "message", data: "plain"),
            ])
    }

    /// The parser looks for line ends eight bytes at a time in what a chunk holds: random streams
    /// (lines of any length, ending in LF, CR or CRLF at every offset of a word) read whole, and in
    /// random pieces, give what they give a byte at a time.
    @Test func wholeChunksReadAsBytesOneAtATimeDo() {
        var random = SystemRandomNumberGenerator()
        let fields = ["data: ", "data:", "id: ", "event: ", ": ", ""]
        let ends = ["\n", "\r", "\r\n"]
        for _ in 0..<300 {
            var stream = ""
            for _ in 0..<Int.random(in: 1...40, using: &random) {
                let text = String((0..<Int.random(in: 0...40, using: &random)).map { _ in "abcdé{}\":, 0".randomElement(using: &random)! })
                stream += fields.randomElement(using: &random)! + text + ends.randomElement(using: &random)!
            }
            let bytes = Array(stream.utf8)
            var byByte = SSEParser()
            let expected = bytes.flatMap { byByte.feed([$0]) }
            var whole = SSEParser()
            #expect(whole.feed(bytes) == expected, "\(stream.debugDescription)")
            var pieces = SSEParser()
            var outputs: [SSEParser.Output] = []
            var start = 0
            while start < bytes.count {
                let end = min(bytes.count, start + Int.random(in: 1...30, using: &random))
                outputs += pieces.feed(bytes[start..<end])
                start = end
            }
            #expect(outputs == expected, "\(stream.debugDescription)")
        }
    }
}
