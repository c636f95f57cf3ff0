import Foundation
import Logging
import Synchronization
import StockroomCore
import StockroomWire
import StockroomStorage
@testable import StockroomStore
import TestSupport
import Testing
@testable import StockroomServer

/// The feed under stalls, restarts, replaced databases and trimmed logs.
extension FeedTests {
    /// A subscriber that stops reading neither blocks writers nor other subscribers; once the
    /// socket buffers in between are full and a write to it stalls, it is cut off (it can resume
    /// from its cursor). How much the kernel buffers varies, so the writer keeps going until the
    /// server reports the stalled stream gone, up to a cap far beyond any socket buffer.
    @Test(.timeLimit(.minutes(10)))
    func aStalledSubscriberDoesNotBlockWriters() async throws {
        try await withTestApp { app in
            try await app.live(settings: Self.fastFeed) { client in
                let server = LiveServer(port: try #require(client.port))
                let stalled = try RawSocket(port: server.port, path: "/v1/changes/stream?topics=navigation&access_token=\(app.editor)")
                let healthySeqs = ReceivedMessages()
                let target = Mutex<Int?>(nil)
                let healthy = Task {
                    let reader = try await SSEReader(server: server, token: app.editor, query: "topics=navigation")
                    while let event = try await reader.next() {
                        let change = try FeedChange.decode(event.data)
                        healthySeqs.append("\(change.seq)")
                        if let last = target.withLock({ $0 }), change.seq >= last { return }
                    }
                }
                // Metrics are per process, shared with the other tests' servers running meanwhile, and only
                // this test stalls a subscriber: it counts the stalled disconnects, not the subscribers.
                func stalledDisconnects() async throws -> Int {
                    let metrics = String(decoding: try await server.request(.GET, "/metrics", token: nil).body, as: UTF8.self)
                    let line = metrics.split(separator: "\n").first { $0.hasPrefix(#"stockroom_feed_stalled_disconnects_total{transport="sse"}"#) }
                    return line.flatMap { $0.split(separator: " ").last }.flatMap { Double($0) }.map { Int($0) } ?? 0
                }
                let disconnectsBefore = try await stalledDisconnects()
                // The largest draft name allowed: 190 characters of 41 UTF-8 bytes each (e + 20 accents).
                let big = String(repeating: "e" + String(repeating: "\u{301}", count: 20), count: 190)
                _ = try await server.request(.POST, "/v1/clients/phone/commands", token: app.editor, json: #"{"command":{"openAdd":{}}}"#)
                var writes = 1
                while writes < 5000 {
                    let response = try await server.request(
                        .POST, "/v1/clients/phone/commands", token: app.editor,
                        json: #"{"command":{"updateDraft":{"draft":{"name":"\#(writes)\#(big)","color":null,"status":{"inStock":{"quantity":1}}}}}}"#)
                    #expect(response.status == 200)
                    writes += 1
                    if writes > 2, try await stalledDisconnects() > disconnectsBefore { break }
                }
                #expect(try await stalledDisconnects() > disconnectsBefore, "the stalled stream was cut off")
                // One more write after the target is known, so the healthy subscriber's wait cannot
                // miss it by having read everything already.
                target.withLock { $0 = writes + 1 }
                let last = try await server.request(
                    .POST, "/v1/clients/phone/commands", token: app.editor,
                    json: #"{"command":{"updateDraft":{"draft":{"name":"last","color":null,"status":{"inStock":{"quantity":1}}}}}}"#)
                #expect(last.status == 200)
                writes += 1
                try await healthy.value
                #expect(healthySeqs.all == (1...writes).map(String.init), "the healthy subscriber got every change, in order")
                // The stalled socket reads what the kernel had buffered, then the server's close.
                #expect(try stalled.readUntilClosed() < writes * 10_000)
            }
        }
    }

    /// The store's inline path (at synchronous=NORMAL a lone write commits on its own event loop)
    /// is decided by the server's count of its write requests: a long-poll waiting for changes is
    /// not a write, so a write made meanwhile still runs inline, and wakes the poll.
    @Test(.timeLimit(.minutes(10)))
    func aWriteWhileALongPollWaitsStillRunsOnItsEventLoop() async throws {
        try await withTestApp { app in
            let writes = WritesInFlight()
            let database = try AppDatabase.open(
                path: app.directory.appendingPathComponent("normal.sqlite").path, synchronous: .normal, writesInFlight: writes)
            let editor = try await database.createToken(user: "erin", role: .editor).secret
            let settings = try Settings(reader: app.reader())
            let server = buildApplication(settings: settings, database: database, writes: writes, logger: Logger(label: "test"))
            try await server.test(.live) { client in
                let live = LiveServer(port: try #require(client.port))
                async let polled = live.request(.GET, "/v1/changes?since=now&wait=60", token: editor)
                try await eventually("the long-poll waits") { database.hub.subscriberCount == 1 }
                let before = database.committer.statistics
                let created = try await live.request(.POST, "/v1/items", token: editor, json: draftJSON(name: "Inline"))
                #expect(created.status == 201)
                // Every write meanwhile ran inline: the POST, and a presence tick the server's
                // service may have written in the same moments (on a busy machine they stretch).
                let after = database.committer.statistics
                #expect(after.inlineWrites - before.inlineWrites >= 1)
                #expect(after.writes - before.writes == after.inlineWrites - before.inlineWrites, "the write went to the writer's queue")
                #expect(writes.count == 0)
                let batch = try JSONCoding.decoder().decode(FeedBatch.self, from: try await polled.body)
                #expect(batch.changes.compactMap(\.item?.name) == ["Inline"])
            }
        }
    }

    /// A subscriber that disconnects is let go at once, not at its next heartbeat: with an hour
    /// between heartbeats, the hub's subscription ends only if the server notices the client's close.
    @Test(.timeLimit(.minutes(10)))
    func aClosedStreamIsNoticedWithoutWaitingForAHeartbeat() async throws {
        try await withTestApp { app in
            // Served from the test's own database, so that its hub is the server's.
            let settings = try Settings(reader: app.reader(extra: ["feed.heartbeatSeconds": .init(.int(3600), isSecret: false)]))
            let server = buildApplication(settings: settings, database: app.database, logger: Logger(label: "test"))
            let hub = app.database.hub
            try await server.test(.live) { client in
                let port = try #require(client.port)
                let path = "/v1/changes/stream?access_token=\(app.viewer)"
                // The stream stays open on a duplicate of its descriptor until shut down below.
                let (head, stream) = try await blocking {
                    let socket = try RawSocket(port: port, path: path).failingStalledReads()
                    return (try socket.readHead(), dup(socket.descriptor))
                }
                defer { close(stream) }
                #expect(head.hasPrefix("HTTP/1.1 200"))
                try await eventually("the stream subscribes") { hub.subscriberCount > 0 }
                #expect(hub.subscriberCount == 1)
                shutdown(stream, Int32(SHUT_RDWR))
                try await eventually("the closed stream unsubscribes") { hub.subscriberCount == 0 }
            }
        }
    }

    /// A long-poll whose client disconnects while it waits lets go of its subscription (and its
    /// place under the subscriber caps) then, not when its `wait` runs out a minute later: whether
    /// the client closes (FIN) or resets (RST) the connection.
    @Test(.timeLimit(.minutes(10)), arguments: [false, true])
    func aClosedLongPollIsNoticedWithoutWaitingForItsWait(reset: Bool) async throws {
        try await withTestApp { app in
            let settings = try Settings(reader: app.reader())
            let server = buildApplication(settings: settings, database: app.database, logger: Logger(label: "test"))
            let hub = app.database.hub
            try await server.test(.live) { client in
                let port = try #require(client.port)
                let request = "GET /v1/changes?since=now&wait=60 HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer \(app.viewer)\r\n\r\n"
                // The poll stays open on a duplicate of its descriptor until shut down below.
                let poll = try await blocking {
                    let socket = try RawSocket(port: port, path: "", raw: request)
                    return withExtendedLifetime(socket) { dup(socket.descriptor) }
                }
                try await eventually("the poll subscribes") { hub.subscriberCount > 0 }
                #expect(hub.subscriberCount == 1)
                if reset {
                    // Closed with a zero linger time: the kernel sends RST, not FIN.
                    var linger = linger(l_onoff: 1, l_linger: 0)
                    setsockopt(poll, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<linger>.size))
                    close(poll)
                } else {
                    shutdown(poll, Int32(SHUT_RDWR))
                }
                defer { if !reset { close(poll) } }
                // Well before the poll's own 60 s end, which would let go of it anyway.
                try await eventually("the closed poll unsubscribes", timeout: .seconds(30)) { hub.subscriberCount == 0 }
            }
        }
    }

    @Test func aRestartedServerContinuesTheSameFeed() async throws {
        try await withTestApp { app in
            let cursor: String = try await app.live { client in
                let server = LiveServer(port: try #require(client.port))
                _ = try await server.request(.POST, "/v1/items", token: app.editor, json: draftJSON(name: "Before"))
                return try await server.drain(since: nil, token: app.viewer).cursor
            }
            try await app.live { client in
                let server = LiveServer(port: try #require(client.port))
                _ = try await server.request(.POST, "/v1/items", token: app.editor, json: draftJSON(name: "After"))
                let feed = try await server.drain(since: cursor, token: app.viewer)
                #expect(feed.changes.map(\.seq) == [2])
                #expect(feed.changes.map(\.item?.name) == ["After"])
            }
        }
    }

    @Test func aReplacedDatabaseAnswers410ToOldCursors() async throws {
        try await withTestApp { app in
            let cursor: String = try await app.live { client in
                let server = LiveServer(port: try #require(client.port))
                _ = try await server.request(.POST, "/v1/items", token: app.editor, json: draftJSON(name: "Old"))
                return try await server.drain(since: nil, token: app.viewer).cursor
            }
            for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: app.databasePath + suffix) }
            let fresh = try AppDatabase.open(path: app.databasePath)
            let token = try await fresh.createToken(user: "erin", role: .editor).secret
            try await app.live { client in
                let server = LiveServer(port: try #require(client.port))
                let response = try await server.request(.GET, "/v1/changes?since=\(cursor)", token: token)
                #expect(response.status == 410)
                #expect(String(decoding: response.body, as: UTF8.self).contains("resyncRequired"))
            }
        }
    }

    @Test func aTrimmedCursorIs410AndTheSnapshotRecovers() async throws {
        try await withTestApp { app in
            try await app.live { client in
                let server = LiveServer(port: try #require(client.port))
                for index in 0..<5 {
                    _ = try await server.request(.POST, "/v1/items", token: app.editor, json: draftJSON(name: "Item \(index)"))
                }
                let early = try #require(try await server.drain(since: nil, token: app.viewer).changes.first?.cursor)
                #expect(try await app.database.trimChanges(maxAge: .seconds(3600), maxEntries: 2) == 3)
                #expect(try await server.request(.GET, "/v1/changes?since=\(early)", token: app.viewer).status == 410)
                #expect(try await server.request(.GET, "/v1/changes", token: app.viewer).status == 410)
                let snapshot = try await server.request(.GET, "/v1/snapshot", token: app.viewer)
                let cursor = try #require((try JSONSerialization.jsonObject(with: snapshot.body) as? [String: Any])?["cursor"] as? String)
                let rest = try await server.drain(since: cursor, token: app.viewer)
                #expect(rest.changes.isEmpty)
                let stats = try await app.database.logStatistics()
                #expect(stats.entries == 2 && stats.oldestSeq == 4)
            }
        }
    }

    /// Every transport reads its feed through `Subscription.read`. A start at the oldest entry
    /// trimmed away between its resolution and the first read moves to the oldest entry then kept;
    /// a cursor the client holds, trimmed away, is still `resyncRequired`.
    @Test func aTrimBetweenResolvingOldestAndTheFirstReadMovesTheStart() async throws {
        try await withTestApp { app in
            let database = app.database
            for index in 0..<5 {
                _ = try await database.createItem(
                    id: nil, draft: Draft(name: "Item \(index)", color: nil, status: .inStock(quantity: 1)), origin: Origin(user: "erin"),
                    idempotency: nil)
            }
            let filter = FeedFilter(user: "erin", topics: [.item])
            let oldest = try await FeedController.Subscription.resolve(.oldest, filter: filter, in: database)
            #expect(oldest.seq == 0)
            let reads = Mutex<[Int64]>([])
            // The trim lands in the window: after the start resolved, before its first read.
            let page = try await oldest.read(after: oldest.seq, in: database) { seq in
                let first = reads.withLock { $0.append(seq); return $0.count == 1 }
                if first { #expect(try await database.trimChanges(maxAge: .seconds(3600), maxEntries: 2) == 3) }
                return try await database.readChanges(after: seq, filter: filter, limit: 100)
            }
            #expect(reads.withLock { $0 } == [0, 3])
            #expect(page.changes.map(\.seq) == [4, 5])

            // A start the client named by its cursor is not moved: the changes it missed are gone.
            let cursor = FeedCursor(epoch: database.epoch, seq: 3)
            let named = try await FeedController.Subscription.resolve(.after(cursor), filter: filter, in: database)
            _ = try await database.createItem(
                id: nil, draft: Draft(name: "Item 5", color: nil, status: .inStock(quantity: 1)), origin: Origin(user: "erin"), idempotency: nil)
            #expect(try await database.trimChanges(maxAge: .seconds(3600), maxEntries: 2) == 1)
            await #expect(throws: StoreError.self) {
                try await named.read(after: named.seq, in: database) { try await database.readChanges(after: $0, filter: filter, limit: 100) }
            }
        }
    }
}
