import Configuration
import Foundation
import StockroomClient
import StockroomCore
import StockroomStorage
import StockroomStore
import TestSupport
import Testing

@Suite("The feed across drops, restarts and resyncs", .timeLimit(.minutes(10)))
struct FeedTests {
    /// Reads events until `count` changes have come; returns them and every event seen.
    static func read(
        _ iterator: inout ChangeFeed.Iterator, changes count: Int
    ) async throws -> (changes: [Change], events: [FeedEvent]) {
        var changes: [Change] = []
        var events: [FeedEvent] = []
        while changes.count < count, let event = try await iterator.next() {
            events.append(event)
            if case .change(let change) = event { changes.append(change) }
        }
        return (changes, events)
    }

    /// Reads events until the feed is connected (a feed from `.now` starts at the head it read first).
    static func connect(_ iterator: inout ChangeFeed.Iterator) async throws {
        while let event = try await iterator.next() {
            if case .connected = event { return }
        }
    }

    @Test(arguments: testedTransports)
    func theFeedResumesWithoutLossOrDuplicatesAcrossAServerRestart(over transport: FeedTransport) async throws {
        try await withServer { server in
            let client = try server.client()
            for index in 0..<5 { _ = try await client.createItem(.named("Before \(index)")) }
            var feed = client.feed(from: .beginning, options: testFeedOptions(transport)).makeAsyncIterator()
            let first = try await Self.read(&feed, changes: 5)

            await server.stop()
            // The drop is noticed (the stream ends or falls silent), and reconnecting fails while the server is down.
            var sawDisconnect = false
            while !sawDisconnect, let event = try await feed.next() {
                if case .disconnected = event { sawDisconnect = true }
                if case .change = event { Issue.record("a change while the server is down") }
            }
            try await server.start()
            for index in 0..<5 { _ = try await client.createItem(.named("After \(index)")) }
            let second = try await Self.read(&feed, changes: 5)

            let all = first.changes + second.changes
            #expect(all.map(\.seq) == Array(1...10), "every change once, in order, across the restart")
            #expect(all.compactMap(\.item?.name) == (0..<5).map { "Before \($0)" } + (0..<5).map { "After \($0)" })
            #expect(second.events.contains { if case .connected = $0 { true } else { false } })
            // The server's own log agrees, change for change.
            #expect(try await client.changes(from: .beginning, limit: 100).changes == all)
        }
    }

    /// An SSE stream opens with the log's head (`Stockroom-Head`): the changes up to it are the
    /// catch-up, and the reader hears where it ends with `.connected`. Writes after it are live.
    @Test func theStreamSaysWhereItsCatchUpEnds() async throws {
        try await withServer { server in
            let client = try server.client()
            for index in 0..<4 { _ = try await client.createItem(.named("Before \(index)")) }
            let head = try await client.changes(from: .beginning, limit: 100).cursor
            var feed = client.feed(from: .beginning, options: testFeedOptions(.serverSentEvents)).makeAsyncIterator()
            var heads: [FeedCursor?] = []
            var changes: [Change] = []
            while changes.count < 4, let event = try await feed.next() {
                if case .connected(let announced) = event { heads.append(announced) }
                if case .change(let change) = event { changes.append(change) }
            }
            #expect(heads == [head], "one connection, opened at the head")
            #expect(changes.last?.cursor == head, "the catch-up ends at the head it announced")
            // A stream from the head has no catch-up: it announces its own start.
            var live = client.feed(from: .now, options: testFeedOptions(.serverSentEvents)).makeAsyncIterator()
            while let event = try await live.next() {
                guard case .connected(let announced) = event else { continue }
                #expect(announced == head)
                break
            }
        }
    }

    /// The server heartbeats every 30 s here; a client that expects one within a second takes the
    /// silence as a drop, reconnects from its cursor, and loses nothing.
    @Test func aMissingHeartbeatCountsAsADropAndTheFeedReconnectsFromItsCursor() async throws {
        try await withServer(settings: ["feed.heartbeatSeconds": .init(.int(30), isSecret: false)]) { server in
            let client = try server.client()
            let options = FeedOptions(heartbeatTimeout: .seconds(1), backoff: Backoff(initial: .milliseconds(20), maximum: .milliseconds(50)))
            var feed = client.feed(from: .now, options: options).makeAsyncIterator()
            var missed = false
            var connections = 0
            while let event = try await feed.next() {
                if case .connected = event { connections += 1 }
                if case .disconnected(let error, _) = event { missed = missed || "\(error)".contains("heartbeat") }
                if missed && connections >= 2 { break }
            }
            let item = try await client.createItem(.named("After the silence"))
            let after = try await Self.read(&feed, changes: 1)
            #expect(after.changes.map(\.item) == [item])
            #expect(after.changes.map(\.seq) == [1], "started at the head, and nothing before it or twice")
        }
    }

    @Test(arguments: testedTransports) @MainActor
    func aTrimmedLogLeadsToASnapshotAndTheStoreEqualsTheServer(over transport: FeedTransport) async throws {
        try await withServer { server in
            let client = try server.client()
            let kept = try await client.createItem(.named("Kept"))
            let store = try SyncedStore(client: client, clientID: "phone", queue: .inMemory(), options: testStoreOptions(transport))
            store.start()
            defer { store.stop() }
            try await waitUntil(store, "the snapshot") { $0.itemsByID[kept.id] != nil && $0.connection == .online }

            // While the server is down, the log moves on and is trimmed past the store's cursor.
            await server.stop()
            try await waitUntil(store, "offline") { if case .offline = $0.connection { true } else { false } }
            let written: [Item] = try await {
                let database = try AppDatabase.open(path: server.databasePath)
                var items: [Item] = []
                for index in 0..<3 {
                    items.append(try await database.createItem(id: nil, draft: .named("Offline \(index)"), origin: Origin(user: "erin")).value)
                }
                _ = try await database.updateItem(kept.id, draft: .named("Kept, renamed"), precondition: nil, origin: Origin(user: "erin"))
                #expect(try await database.trimChanges(maxAge: .seconds(3600), maxEntries: 1) > 0)
                return items
            }()
            try await server.start()

            // The feed answers 410; the store reloads from a snapshot and equals the server.
            try await waitUntil(store, "the resync") { $0.resyncCount == 1 && $0.connection == .online }
            let serverItems = try await client.allItems()
            #expect(serverItems.map(\.name) == ["Kept, renamed", "Offline 0", "Offline 1", "Offline 2"])
            #expect(store.items == serverItems)
            #expect(written.allSatisfy { store.itemsByID[$0.id] == $0 })
        }
    }

    /// A feed started from a cursor the log no longer holds, on a server that is up all along,
    /// answers with a snapshot (`.resync`) and follows on from it, over every transport (over a
    /// WebSocket the refusal is the close code 4410 right after the upgrade).
    @Test(arguments: testedTransports)
    func aFeedFromATrimmedCursorResyncsAndGoesOn(over transport: FeedTransport) async throws {
        let trimming: [AbsoluteConfigKey: ConfigValue] = [
            "feed.retention.maxEntries": .init(.int(2), isSecret: false),
            "feed.retention.intervalSeconds": .init(.int(1), isSecret: false),
        ]
        try await withServer(settings: trimming) { server in
            let client = try server.client()
            let old = try await client.changes(from: .now).cursor
            for index in 0..<6 { _ = try await client.createItem(.named("Crate \(index)")) }
            try await eventually("the log is trimmed past the cursor") {
                do {
                    _ = try await client.changes(from: .after(old))
                    return false
                } catch let error as StockroomError {
                    return error.status == 410
                }
            }
            // A feed that never resyncs is cut after 30 s (the test then fails rather than waits).
            let outcome = try await withThrowingTaskGroup(of: (Snapshot, Item, [Change])?.self) { group in
                group.addTask {
                    var feed = client.feed(from: .after(old), options: FeedOptions(transport: transport)).makeAsyncIterator()
                    while let event = try await feed.next() {
                        guard case .resync(let snapshot) = event else { continue }
                        let next = try await client.createItem(.named("After"))
                        return (snapshot, next, try await Self.read(&feed, changes: 1).changes)
                    }
                    return nil
                }
                group.addTask {
                    try await Task.sleep(for: .seconds(30))
                    return nil
                }
                defer { group.cancelAll() }
                return try await group.next() ?? nil
            }
            let (snapshot, next, changes) = try #require(outcome, "the feed resynced within 30 s")
            #expect(snapshot.items.map(\.name) == (0..<6).map { "Crate \($0)" })
            #expect(changes.first?.item?.id == next.id)
        }
    }

    @Test(arguments: testedTransports) @MainActor
    func aRestoredBackupLeadsToASnapshotAndTheStoreEqualsTheServer(over transport: FeedTransport) async throws {
        try await withServer { server in
            let client = try server.client()
            let old = try await client.createItem(.named("In the backup"))
            let backup = server.clientFile("backup.sqlite")
            try FileManager.default.createDirectory(atPath: (backup as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            _ = try AppDatabase.open(path: server.databasePath).backup(to: backup)

            let store = try SyncedStore(client: client, clientID: "phone", queue: .inMemory(), options: testStoreOptions(transport))
            store.start()
            defer { store.stop() }
            let later = try await client.createItem(.named("After the backup"))
            try await waitUntil(store, "both items") { $0.items.count == 2 && $0.connection == .online }

            // The database is replaced by the backup (a new epoch): the store's cursor means nothing there.
            await server.stop()
            _ = try AppDatabase.restore(from: backup, to: server.databasePath)
            try await server.start()

            try await waitUntil(store, "the resync") { $0.resyncCount == 1 && $0.itemsByID[later.id] == nil }
            #expect(store.items == [old])
            #expect(try await client.allItems() == [old])
            // And it follows the new epoch's feed on from there.
            let next = try await client.createItem(.named("After the restore"))
            try await waitUntil(store, "the next item") { $0.itemsByID[next.id] == next }
            #expect(store.items == [old, next])
        }
    }

    /// A token revoked while its feed is open ends the feed with `unauthorized`, whatever the
    /// transport: an SSE `error` event, a WebSocket's close code 4401, a long-poll's 401.
    @Test(arguments: testedTransports)
    func aRevokedTokenEndsTheFeedWithUnauthorized(over transport: FeedTransport) async throws {
        try await withServer { server in
            let admin = try server.client(token: server.admin)
            let token = try await admin.createToken(user: "nina", role: .editor)
            let nina = try server.client(token: token.token)
            var feed = nina.feed(from: .now, options: testFeedOptions(transport)).makeAsyncIterator()
            try await Self.connect(&feed)
            _ = try await admin.createItem(.named("Seen"))
            #expect(try await Self.read(&feed, changes: 1).changes.compactMap(\.item?.name) == ["Seen"])
            try await admin.revokeToken(id: token.id)
            let error = try await #require(throws: StockroomError.self) {
                while try await feed.next() != nil {}
            }
            #expect(error.status == 401 && error.code == .unauthorized)
        }
    }

    /// A server that shuts down closes a WebSocket with 1001 (going away): the feed takes it as a
    /// drop and reconnects from its cursor once the server is back.
    @Test func aWebSocketClosedWithGoingAwayReconnects() async throws {
        try await withServer { server in
            let client = try server.client()
            var feed = client.feed(from: .now, options: testFeedOptions(.webSocket)).makeAsyncIterator()
            try await Self.connect(&feed)
            _ = try await client.createItem(.named("Before"))
            _ = try await Self.read(&feed, changes: 1)
            await server.stop()
            var drop: (any Error)?
            while drop == nil, let event = try await feed.next() {
                if case .disconnected(let error, _) = event { drop = error }
            }
            #expect("\(try #require(drop))".contains("ended"), "the 1001 close is the end of the stream: \(String(describing: drop))")
            try await server.start()
            let after = try await client.createItem(.named("After"))
            #expect(try await Self.read(&feed, changes: 1).changes.map(\.item) == [after])
        }
    }
}
