import AsyncHTTPClient
import Configuration
import Foundation
import HummingbirdWSClient
import Logging
import NIOCore
import HummingbirdTesting
import StockroomCore
import StockroomWire
@testable import StockroomStore
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
                // Without upgrade headers the request's own shape comes first, whatever its cursor.
                let gone = try await server.request(.GET, "/v1/changes/ws?since=c1.abcdef.0&access_token=\(app.viewer)", token: nil)
                #expect(gone.status == 426)
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
        ("since=c1.%EF%BC%90%EF%BD%86.1", 400, "invalidParameter"),  // fullwidth digits: not the server's form
        ("since=c1.00ff.%2B1", 400, "invalidParameter"),  // a signed seq
        ("since=c1.00ff.-0", 400, "invalidParameter"),
        ("since=c1.00ff.%EF%BC%91", 400, "invalidParameter"),
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
}
