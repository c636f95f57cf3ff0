import AsyncHTTPClient
import Configuration
import Foundation
import Synchronization
import HummingbirdWSClient
import Logging
import NIOCore
import HummingbirdTesting
import StockroomCore
import StockroomWire
import StockroomStorage
@testable import StockroomStore
import TestSupport
import Testing

@testable import StockroomServer

@Suite("Change feed, against a live server on loopback")
struct FeedTests {
    static let fastFeed: [AbsoluteConfigKey: ConfigValue] = [
        "feed.heartbeatSeconds": .init(.int(1), isSecret: false),
        "feed.writeTimeoutSeconds": .init(.int(1), isSecret: false),
    ]

    @Test func everyWriteAppendsItsChangesInCommitOrderWithOrigins() async throws {
        try await withTestApp { app in
            try await app.live { client in
                let server = LiveServer(port: try #require(client.port))
                let created = try await server.request(.POST, "/v1/items", token: app.editor, json: draftJSON(name: "Mug"), headers: [("Idempotency-Key", "k1")])
                let item = try JSONCoding.decoder().decode(Item.self, from: created.body)
                _ = try await server.request(.POST, "/v1/clients/phone/commands", token: app.editor, json: #"{"command":{"push":{"route":{"item":{"id":"\#(item.id)"}}}}}"#)
                _ = try await server.request(.DELETE, "/v1/items/\(item.id)", token: app.otherEditor)

                let feed = try await server.drain(since: nil, token: app.editor)
                #expect(feed.changes.map(\.seq) == [1, 2, 3, 4])
                #expect(feed.changes.map { "\($0.entity) \($0.op)" } == ["item upsert", "navigation upsert", "item delete", "navigation upsert"])
                #expect(feed.changes[0].item == item)
                #expect(feed.changes[0].origin == .init(clientID: nil, idempotencyKey: "k1"))
                #expect(feed.changes[1].origin == .init(clientID: "phone", idempotencyKey: nil))
                #expect(feed.changes[1].navigation?.state.path == [.item(id: item.id)])
                #expect(feed.changes[2].id == item.id.description && feed.changes[2].item == nil)
                // The repair of the phone's path carries the delete's origin.
                #expect(feed.changes[3].navigation?.state.path == [])
                #expect(feed.changes[3].origin == feed.changes[2].origin)
                #expect(feed.changes.allSatisfy { $0.cursor.hasSuffix(".\($0.seq)") })
            }
        }
    }

    @Test func sseResumesWithLastEventIDExactlyOnceAndInOrder() async throws {
        try await withTestApp { app in
            try await app.live(settings: Self.fastFeed) { client in
                let server = LiveServer(port: try #require(client.port))
                for index in 0..<6 {
                    _ = try await server.request(.POST, "/v1/items", token: app.editor, json: draftJSON(name: "Item \(index)"))
                }
                let first = try await SSEReader(server: server, token: app.viewer)
                #expect(first.status == 200)
                let firstHalf = try await first.changes(3)
                let lastID = try #require(firstHalf.last?.id)
                // Disconnected: more happens meanwhile.
                for index in 6..<9 {
                    _ = try await server.request(.POST, "/v1/items", token: app.editor, json: draftJSON(name: "Item \(index)"))
                }
                // Last-Event-ID wins over since (here: the head, which would skip everything).
                let resumed = try await SSEReader(server: server, token: app.viewer, query: "since=now", lastEventID: lastID)
                let rest = try await resumed.changes(6)
                let all = (firstHalf + rest).map(\.change)
                #expect(all.map(\.seq) == Array(1...9))
                #expect(all.compactMap(\.item?.name) == (0..<9).map { "Item \($0)" })
                #expect((firstHalf + rest).allSatisfy { $0.id == $0.change.cursor })
                let batch = try await server.drain(since: nil, token: app.viewer)
                #expect(batch.changes == all)
                // Idle now: heartbeats keep the stream alive.
                #expect(try await resumed.waitForHeartbeats(1).isEmpty)
            }
        }
    }

    @Test func aLongPollWakesOnACommitAndTimesOutEmpty() async throws {
        try await withTestApp { app in
            try await app.live { client in
                let server = LiveServer(port: try #require(client.port))
                let empty = try await server.request(.GET, "/v1/changes?since=now&wait=1", token: app.viewer)
                let emptyBatch = try JSONCoding.decoder().decode(FeedBatch.self, from: empty.body)
                #expect(emptyBatch.changes.isEmpty)
                #expect(emptyBatch.hasMore == false)

                async let polled = server.request(.GET, "/v1/changes?since=\(emptyBatch.cursor)&wait=60", token: app.viewer)
                // Navigation of another user does not wake it; the item does.
                _ = try await server.request(.POST, "/v1/clients/other/commands", token: app.otherEditor, json: #"{"command":{"selectTab":{"tab":"settings"}}}"#)
                let created = try await server.request(.POST, "/v1/items", token: app.editor, json: draftJSON(name: "Awaited"))
                let batch = try JSONCoding.decoder().decode(FeedBatch.self, from: try await polled.body)
                #expect(batch.changes.map(\.item) == [try JSONCoding.decoder().decode(Item.self, from: created.body)])
                #expect(batch.cursor.hasSuffix(".2"))
            }
        }
    }

    @Test func navigationChangesReachOnlyTheirOwner() async throws {
        try await withTestApp { app in
            try await app.live(settings: Self.fastFeed) { client in
                let server = LiveServer(port: try #require(client.port))
                let otto = try await SSEReader(server: server, token: app.otherEditor, query: "topics=navigation")
                _ = try await server.request(.POST, "/v1/clients/erins-phone/commands", token: app.editor, json: #"{"command":{"openAdd":{}}}"#)
                _ = try await server.request(.POST, "/v1/clients/ottos-phone/commands", token: app.otherEditor, json: #"{"command":{"selectTab":{"tab":"settings"}}}"#)
                _ = try await server.request(.POST, "/v1/items", token: app.editor, json: draftJSON(name: "Mug"))

                let seen = try await otto.changes(1)
                #expect(seen.map(\.change.id) == ["ottos-phone"])
                let erins = try await server.drain(since: nil, token: app.editor)
                #expect(erins.changes.map(\.id).filter { !$0.contains("-phone") || $0 == "erins-phone" }.count == 2)
                #expect(!erins.changes.contains { $0.id == "ottos-phone" })
                let ottos = try await server.drain(since: nil, token: app.otherEditor, topics: "navigation")
                #expect(ottos.changes.map(\.id) == ["ottos-phone"])
                // The cursor still advances past what Otto may not see.
                #expect(ottos.cursor == erins.cursor)
                let items = try await server.drain(since: nil, token: app.viewer, topics: "items")
                #expect(items.changes.map(\.entity) == ["item"])
            }
        }
    }

    @Test func aWebSocketReplaysTheFeedOneChangePerTextMessage() async throws {
        try await withTestApp { app in
            try await app.live { client in
                let server = LiveServer(port: try #require(client.port))
                for index in 0..<4 {
                    _ = try await server.request(.POST, "/v1/items", token: app.editor, json: draftJSON(name: "Item \(index)"))
                }
                let expected = try await server.drain(since: nil, token: app.viewer).changes
                let received = ReceivedMessages()
                try await WebSocketClient.connect(
                    url: "ws://127.0.0.1:\(server.port)/v1/changes/ws?access_token=\(app.viewer)", logger: Logger(label: "test")
                ) { inbound, outbound, _ in
                    for try await message in inbound.messages(maxSize: 1 << 20) {
                        guard case .text(let text) = message else { continue }
                        received.append(text)
                        if received.count == expected.count { break }
                    }
                    try await outbound.close(.normalClosure, reason: nil)
                }
                #expect(try received.all.map(FeedChange.decode) == expected)
            }
        }
    }

    @Test func aRefusedUpgradeAnswersWithTheHTTPError() async throws {
        try await withTestApp { app in
            try await app.live { client in
                let server = LiveServer(port: try #require(client.port))
                let unauthorized = try await server.request(.GET, "/v1/changes/ws", token: nil)
                #expect(unauthorized.status == 401)
                let gone = try await server.request(.GET, "/v1/changes/ws?since=c1.abcdef.0&access_token=\(app.viewer)", token: nil)
                #expect(gone.status == 410)
                let sseGone = try await server.request(.GET, "/v1/changes/stream?since=c1.abcdef.0", token: app.viewer)
                #expect(sseGone.status == 410)
                let plain = try await server.request(.GET, "/v1/changes/ws", token: app.viewer)
                #expect(plain.status == 426)
            }
        }
    }

    @Test(arguments: [
        ("since=c1.00ff.99", 410, "resyncRequired"),
        ("since=garbage", 400, "invalidParameter"),
        ("topics=items,pets", 400, "invalidParameter"),
        ("limit=0", 422, "validationFailed"),
        ("limit=1001", 422, "validationFailed"),
        ("wait=61", 422, "validationFailed"),
        ("wait=soon", 400, "invalidParameter"),
        ("limit=0&topics=bogus", 400, "invalidParameter"),
        ("wait=61&since=bad", 400, "invalidParameter"),
    ])
    func badFeedParameters(query: String, status: Int, code: String) async throws {
        try await withTestApp { app in
            try await app.live { client in
                let server = LiveServer(port: try #require(client.port))
                let response = try await server.request(.GET, "/v1/changes?\(query)", token: app.viewer)
                #expect(response.status == status)
                let json = try JSONSerialization.jsonObject(with: response.body) as? [String: [String: Any]]
                #expect(json?["error"]?["code"] as? String == code)
            }
        }
    }

    @Test func aCursorBeyondTheHeadIs410() async throws {
        try await withTestApp { app in
            try await app.live { client in
                let server = LiveServer(port: try #require(client.port))
                let head = try await server.drain(since: nil, token: app.viewer).cursor
                let beyond = head.replacingOccurrences(of: #"\.0$"#, with: ".5", options: .regularExpression)
                #expect(try await server.request(.GET, "/v1/changes?since=\(beyond)", token: app.viewer).status == 410)
            }
        }
    }

    /// Writers run concurrently while a snapshot is taken mid-way; the snapshot plus the feed
    /// replayed from its cursor equals the server's final state.
    @Test func snapshotPlusReplayEqualsTheFinalState() async throws {
        try await withTestApp { app in
            try await app.live { client in
                let server = LiveServer(port: try #require(client.port))
                let sse = try await SSEReader(server: server, token: app.editor)
                // The snapshot is taken once the first writer is a third of the way through, while
                // the others still write: signalled, not timed.
                let (midway, signalMidway) = AsyncStream.makeStream(of: Void.self)
                let snapshotTask = Task {
                    for await _ in midway { break }
                    return try await server.request(.GET, "/v1/snapshot", token: app.editor)
                }
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for writer in 0..<4 {
                        group.addTask {
                            var mine: [ItemID] = []
                            for step in 0..<15 {
                                if writer == 0, step == 5 { signalMidway.yield() }
                                switch step % 5 {
                                case 0, 1:
                                    let created = try await server.request(.POST, "/v1/items", token: app.editor, json: draftJSON(name: "W\(writer)-\(step)"))
                                    mine.append(try JSONCoding.decoder().decode(Item.self, from: created.body).id)
                                case 2:
                                    if let id = mine.last {
                                        _ = try await server.request(.PUT, "/v1/items/\(id)", token: app.editor, json: draftJSON(name: "W\(writer)-\(step)-renamed", quantity: step))
                                    }
                                case 3:
                                    if let id = mine.first {
                                        _ = try await server.request(.POST, "/v1/clients/w\(writer)/commands", token: app.editor, json: #"{"command":{"push":{"route":{"item":{"id":"\#(id)"}}}}}"#)
                                    }
                                default:
                                    if let id = mine.first {
                                        mine.removeFirst()
                                        _ = try await server.request(.DELETE, "/v1/items/\(id)", token: app.editor)
                                    }
                                }
                            }
                        }
                    }
                    try await group.waitForAll()
                }
                let snapshotResponse = try await snapshotTask.value
                #expect(snapshotResponse.status == 200)
                struct SnapshotBody: Decodable {
                    let items: [Item]
                    let navigation: [Navigation]
                    let cursor: String
                }
                let snapshot = try JSONCoding.decoder().decode(SnapshotBody.self, from: snapshotResponse.body)

                // Replay the feed from the snapshot's cursor on top of the snapshot.
                var items = Dictionary(uniqueKeysWithValues: snapshot.items.map { ($0.id.description, $0) })
                var navigation = Dictionary(uniqueKeysWithValues: snapshot.navigation.map { ($0.clientID, $0) })
                let replay = try await server.drain(since: snapshot.cursor, token: app.editor)
                for change in replay.changes {
                    switch (change.entity, change.op) {
                    case ("item", "upsert"): items[change.id] = change.item
                    case ("item", "delete"): items[change.id] = nil
                    case ("navigation", _): navigation[ClientID(stored: change.id)] = change.navigation
                    default: Issue.record("unexpected change \(change)")
                    }
                }
                let final = try await server.request(.GET, "/v1/snapshot", token: app.editor)
                let state = try JSONCoding.decoder().decode(SnapshotBody.self, from: final.body)
                #expect(items == Dictionary(uniqueKeysWithValues: state.items.map { ($0.id.description, $0) }))
                #expect(navigation == Dictionary(uniqueKeysWithValues: state.navigation.map { ($0.clientID, $0) }))
                #expect(replay.cursor == state.cursor)

                // The live SSE subscriber saw the whole log exactly once, in order, with no gaps.
                let everything = try await server.drain(since: nil, token: app.editor).changes
                #expect(everything.map(\.seq) == Array(1...everything.count))
                let streamed = try await sse.changes(everything.count).map(\.change)
                #expect(streamed == everything)
            }
        }
    }

    /// A subscriber that stops reading neither blocks writers nor other subscribers; once the
    /// socket buffers in between are full and a write to it stalls, it is cut off (it can resume
    /// from its cursor). How much the kernel buffers varies, so the writer keeps going until the
    /// server reports the stalled stream gone, up to a cap far beyond any socket buffer.
    @Test(.timeLimit(.minutes(3)))
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
    @Test(.timeLimit(.minutes(1)))
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
                let before = database.committer.statistics.inlineWrites
                let created = try await live.request(.POST, "/v1/items", token: editor, json: draftJSON(name: "Inline"))
                #expect(created.status == 201)
                #expect(database.committer.statistics.inlineWrites == before + 1, "the write went to the writer's queue")
                #expect(writes.count == 0)
                let batch = try JSONCoding.decoder().decode(FeedBatch.self, from: try await polled.body)
                #expect(batch.changes.compactMap(\.item?.name) == ["Inline"])
            }
        }
    }

    /// A subscriber that disconnects is let go at once, not at its next heartbeat: with an hour
    /// between heartbeats, the hub's subscription ends only if the server notices the client's close.
    @Test(.timeLimit(.minutes(1)))
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
}

/// Messages a WebSocket handler collected.
final class ReceivedMessages: Sendable {
    private let messages = Mutex<[String]>([])
    func append(_ text: String) { messages.withLock { $0.append(text) } }
    var count: Int { messages.withLock { $0.count } }
    var all: [String] { messages.withLock { $0 } }
}

/// A raw TCP client with a tiny receive buffer: sends one request, then reads only when told to.
final class RawSocket {
    let descriptor: Int32

    init(port: Int, path: String, raw: String? = nil) throws {
        descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        var size: Int32 = 4096
        setsockopt(descriptor, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            // The real reason (a refusal, or EMFILE in this process, say), not always "refused".
            // (deinit closes the descriptor: every property is set, so it runs when init throws.)
            throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
        }
        let request = raw ?? "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
        _ = request.withCString { send(descriptor, $0, strlen($0), 0) }
    }

    /// Reads everything until the peer closes; returns how many bytes came.
    func readUntilClosed() throws -> Int {
        try Self.readUntilClosed(descriptor)
    }

    /// Reads `descriptor` until the peer closes; returns how many bytes came.
    static func readUntilClosed(_ descriptor: Int32) throws -> Int {
        var total = 0
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = recv(descriptor, &buffer, buffer.count, 0)
            if count == 0 { return total }
            if count < 0 { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
            total += count
        }
    }

    deinit { close(descriptor) }
}
