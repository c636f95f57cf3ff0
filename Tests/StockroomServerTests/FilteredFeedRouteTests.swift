import Configuration
import Foundation
import HummingbirdWSClient
import Logging
import StockroomCore
import StockroomWire
import TestSupport
import Testing

@testable import StockroomServer

/// `filter=` on the feed's routes and the snapshot, against a live server on loopback (API.md,
/// "Filtered feeds"); the storage contract tests hold the moves and the property on both backends.
@Suite("Filtered feeds, against a live server on loopback")
struct FilteredFeedRouteTests {
    /// A query value, every byte but the unreserved ones percent-encoded.
    static func encoded(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: CharacterSet(charactersIn: "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~"))!
    }

    static func create(_ server: LiveServer, _ app: TestApp, name: String, quantity: Int) async throws -> Item {
        let created = try await server.request(.POST, "/v1/items", token: app.editor, json: draftJSON(name: name, quantity: quantity))
        try #require(created.status == 201)
        return try JSONCoding.decoder().decode(Item.self, from: created.body)
    }

    /// Cable (quantity 1), Lamp (4) and Mug (8), then the viewer's WebSocket on the items under
    /// `quantity <= 5`. `body` gets the socket after its first two messages (Cable's and Lamp's
    /// changes) and reads on with `next`; every message read is returned in order, those two first.
    static func cableLampMugUnderFive(
        _ server: LiveServer, _ app: TestApp,
        _ body: @escaping @Sendable (_ items: (Item, Item, Item), _ next: () async throws -> String, _ outbound: WebSocketOutboundWriter) async throws -> Void
    ) async throws -> (items: (Item, Item, Item), messages: [String]) {
        let items = (
            try await create(server, app, name: "Cable", quantity: 1), try await create(server, app, name: "Lamp", quantity: 4),
            try await create(server, app, name: "Mug", quantity: 8)
        )
        let received = ReceivedMessages()
        try await WebSocketClient.connect(
            url: "ws://127.0.0.1:\(server.port)/v1/changes/ws?topics=items&filter=\(encoded("quantity <= 5"))&access_token=\(app.viewer)",
            logger: Logger(label: "test")
        ) { inbound, outbound, _ in
            var messages = inbound.messages(maxSize: 1 << 20).makeAsyncIterator()
            let next = {
                let text = try await messages.nextText()
                received.append(text)
                return text
            }
            _ = try await next()
            _ = try await next()
            try await body(items, next, outbound)
            try await outbound.close(.normalClosure, reason: nil)
        }
        return (items, received.all)
    }

    static func update(_ server: LiveServer, _ app: TestApp, _ item: Item, quantity: Int) async throws {
        let updated = try await server.request(.PUT, "/v1/items/\(item.id)", token: app.editor, json: draftJSON(name: item.name, quantity: quantity))
        try #require(updated.status == 200)
    }

    /// A long-poll page, its changes decoded as the SDK decodes them (with `move`).
    struct Page: Decodable {
        let changes: [Change]
        let cursor: String
        let hasMore: Bool

        /// The page a `200` answered with.
        static func of(_ response: (status: Int, body: Data)) throws -> Page {
            try #require(response.status == 200, "\(String(decoding: response.body, as: UTF8.self))")
            return try JSONCoding.decoder().decode(Page.self, from: response.body)
        }
    }

    /// Every change of a long-poll page, decoded as the SDK decodes it (with `move`).
    static func page(_ server: LiveServer, _ app: TestApp, _ query: String) async throws -> (changes: [Change], cursor: String, hasMore: Bool) {
        let page = try Page.of(try await server.request(.GET, "/v1/changes?" + query, token: app.viewer))
        return (page.changes, page.cursor, page.hasMore)
    }

    @Test func theLongPollAndSSESendMovesAndSSEAnnouncesProgress() async throws {
        try await withTestApp { app in
            try await app.live(settings: FeedTests.fastFeed) { client in
                let server = LiveServer(port: try #require(client.port))
                let filter = Self.encoded("quantity <= 5")
                let low = try await Self.create(server, app, name: "Cable", quantity: 3)
                let high = try await Self.create(server, app, name: "Lamp", quantity: 10)
                try await Self.update(server, app, high, quantity: 2)
                try await Self.update(server, app, low, quantity: 9)

                let page = try await Self.page(server, app, "filter=\(filter)&topics=items")
                #expect(page.changes.map { "\($0.seq) \($0.operation.rawValue) \($0.move?.rawValue ?? "-")" } == ["1 upsert -", "3 upsert in", "4 delete out"])
                #expect(page.changes[1].item?.status == .inStock(quantity: 2) && page.changes[2].value == nil)

                // The same over SSE, then progress past a write the filter hides.
                let stream = try await SSEReader(server: server, token: app.viewer, query: "filter=\(filter)&topics=items")
                #expect(stream.status == 200)
                var events: [SSEReader.Event] = []
                for _ in 0..<3 { events.append(try #require(try await stream.next())) }
                let moves = try events.map { try JSONCoding.decoder().decode(Change.self, from: Data($0.data.utf8)).move }
                #expect(events.map(\.event) == ["change", "change", "change"] && moves == [nil, .in, .out])
                _ = try await Self.create(server, app, name: "Mug", quantity: 50)
                let progress = try #require(try await stream.next())
                #expect(progress.event == "progress")
                let cursor = try #require(progress.id)
                #expect(cursor.hasSuffix(".5") && progress.data == #"{"cursor":"\#(cursor)"}"#)

                // A long-poll whose filter hides everything answers with the head's cursor.
                let quiet = try await Self.page(server, app, "filter=\(Self.encoded("name = \"nothing\""))&since=\(page.cursor)&wait=1")
                #expect(quiet.changes.isEmpty && quiet.cursor == cursor && !quiet.hasMore)
            }
        }
    }

    @Test func aFilterChangedInPlaceSendsOnlyWhatTheClientLacks() async throws {
        try await withTestApp { app in
            try await app.live { client in
                let server = LiveServer(port: try #require(client.port))
                let a = try await Self.create(server, app, name: "Cable", quantity: 1)
                let b = try await Self.create(server, app, name: "Lamp", quantity: 4)
                let c = try await Self.create(server, app, name: "Mug", quantity: 8)
                let old = Self.encoded("quantity <= 5")
                let snapshotResponse = try await server.request(.GET, "/v1/snapshot?filter=\(old)", token: app.viewer)
                let snapshot = try JSONCoding.decoder().decode(Snapshot.self, from: snapshotResponse.body)
                #expect(snapshot.items.map(\.id) == [a.id, b.id])
                try await Self.update(server, app, b, quantity: 3)

                let new = Self.encoded("quantity >= 2")
                let response = try await server.request(
                    .GET, "/v1/snapshot?filter=\(new)&fromFilter=\(old)&since=\(snapshot.cursor.encoded)", token: app.viewer)
                #expect(response.status == 200)
                let delta = try JSONCoding.decoder().decode(Delta.self, from: response.body)
                // b changed since (sent), c moved in (sent), a no longer matches (removed).
                #expect(Set(delta.items.map(\.id)) == [b.id, c.id])
                #expect(delta.removed == [a.id])
                #expect(delta.cursor.hasSuffix(".4"))

                let trimmedSince = try await server.request(.GET, "/v1/snapshot?filter=\(new)&since=c1.0000.1", token: app.viewer)
                #expect(trimmedSince.status == 400 || trimmedSince.status == 410)
                let noSince = try await server.request(.GET, "/v1/snapshot?filter=\(new)&fromFilter=\(old)", token: app.viewer)
                #expect(noSince.status == 422)
            }
        }
    }

    @Test func aWebSocketChangesItsFilterInPlace() async throws {
        try await withTestApp { app in
            try await app.live { client in
                let server = LiveServer(port: try #require(client.port))
                let ((a, b, c), all) = try await Self.cableLampMugUnderFive(server, app) { items, next, outbound in
                    try await outbound.write(.text(#"{"setFilter":{"filter":"quantity >= 2"}}"#))
                    _ = try await next()
                    try await outbound.write(.text(#"{"setFilter":{"filter":"quantity <"}}"#))
                    _ = try await next()
                    // A misspelled key is refused, not read as "no filter" (which would widen the stream).
                    try await outbound.write(.text(#"{"setFilter":{"filtr":"quantity >= 100"}}"#))
                    _ = try await next()
                    // So is a name given twice (JSONDecoder alone kept one of the two filters).
                    try await outbound.write(.text(#"{"setFilter":{"filter":"quantity >= 100","filter":null}}"#))
                    _ = try await next()
                    try await Self.update(server, app, items.0, quantity: 3)
                    _ = try await next()
                }
                try #require(all.count == 7)
                #expect(try [all[0], all[1]].map { try FeedChange.decode($0).item?.id } == [a.id, b.id])
                struct Refiltered: Decodable { let refilter: Delta }
                let refilter = try JSONCoding.decoder().decode(Refiltered.self, from: Data(all[2].utf8)).refilter
                #expect(refilter.items.map(\.id) == [c.id], "b matches both filters and is unchanged: not sent again")
                #expect(refilter.removed == [a.id])
                // An `Error` body, as an HTTP answer's: `{"error": {"code", "message", "field"}}`.
                struct ErrorMessage: Decodable {
                    struct Body: Decodable { let code: String; let message: String }
                    let error: Body
                }
                let refused = try JSONCoding.decoder().decode(ErrorMessage.self, from: Data(all[3].utf8)).error
                #expect(refused.code == "validationFailed" && refused.message.contains("at character 11"), "\(all[3])")
                let misspelled = try JSONCoding.decoder().decode(ErrorMessage.self, from: Data(all[4].utf8)).error
                #expect(misspelled.code == "invalidJSON" && misspelled.message.contains(#"unknown key "filtr""#), "\(all[4])")
                let repeated = try JSONCoding.decoder().decode(ErrorMessage.self, from: Data(all[5].utf8)).error
                #expect(repeated.code == "invalidJSON" && repeated.message.contains("'setFilter.filter' is given twice"), "\(all[5])")
                let moved = try JSONCoding.decoder().decode(Change.self, from: Data(all[6].utf8))
                #expect(moved.id == a.id.description && moved.move == .in && moved.seq == 4)
            }
        }
    }

    /// A burst of `setFilter`s: the newest wins. However many `refilter`s answer it (one per
    /// request, or fewer when a request replaced one not yet applied), applying them in order
    /// leaves the client holding exactly the last filter's items, and the changes after them are
    /// under that filter.
    @Test func aBurstOfFilterChangesEndsUnderTheLastFilter() async throws {
        try await withTestApp { app in
            try await app.live { client in
                let server = LiveServer(port: try #require(client.port))
                let ((a, b, c), all) = try await Self.cableLampMugUnderFive(server, app) { items, next, outbound in
                    for filter in ["quantity >= 100", "quantity >= 2", "quantity <= 1", "quantity >= 6"] {
                        try await outbound.write(.text(#"{"setFilter":{"filter":"\#(filter)"}}"#))
                    }
                    // Lamp's change is under none of the last filter's items; Mug's is.
                    try await Self.update(server, app, items.1, quantity: 5)
                    try await Self.update(server, app, items.2, quantity: 9)
                    while try await next().hasPrefix(#"{"refilter""#) {}
                }
                var held: Set<ItemID> = try Set([all[0], all[1]].compactMap { try FeedChange.decode($0).item?.id })
                #expect(held == [a.id, b.id])
                struct Refiltered: Decodable { let refilter: Delta }
                let refilters = try all.dropFirst(2).dropLast().map { try JSONCoding.decoder().decode(Refiltered.self, from: Data($0.utf8)).refilter }
                #expect((1...4).contains(refilters.count), "\(all)")
                for delta in refilters {
                    held.subtract(delta.removed)
                    held.formUnion(delta.items.map(\.id))
                }
                #expect(held == [c.id], "\(all)")
                let last = try JSONCoding.decoder().decode(Change.self, from: Data(try #require(all.last).utf8))
                #expect(last.id == c.id.description && last.move == nil, "\(all)")
            }
        }
    }

    /// A stream whose filter hid every write while the log was trimmed past where it stood goes on
    /// with the next change it shows, not `resyncRequired`: the hub knows that none of the trimmed
    /// entries concerned it. SSE and the WebSocket under an item filter, SSE under a topic, and a
    /// WebSocket that changes its filter in place after such a trim (the delta from past it).
    @Test func aStreamThatTheTrimmedEntriesDidNotConcernGoesOn() async throws {
        try await withTestApp { app in
            try await app.live(settings: Self.trimming) { client in
                let server = LiveServer(port: try #require(client.port))
                let filter = Self.encoded("quantity <= 5")
                /// Six writes the streams do not show, then waits until the server has trimmed the
                /// log past `cursor`, where the stream stands.
                @Sendable func hiddenWrites(thenTrimmedPast cursor: String) async throws {
                    for index in 0..<6 { _ = try await Self.create(server, app, name: "Crate \(index)", quantity: 50) }
                    try await eventually("the log is trimmed past \(cursor)", interval: .milliseconds(100)) {
                        try await server.request(.GET, "/v1/changes?since=\(Self.encoded(cursor))", token: app.editor).status == 410
                    }
                }

                let sse = try await SSEReader(server: server, token: app.viewer, query: "topics=items&filter=\(filter)&since=now")
                #expect(sse.status == 200)
                let cable = try await Self.create(server, app, name: "Cable", quantity: 3)
                let first = try await sse.changes(1)
                #expect(first.map(\.change.id) == [cable.id.description])
                try await hiddenWrites(thenTrimmedPast: try #require(first.first?.id))
                try await Self.update(server, app, cable, quantity: 4)
                let next = try #require(try await sse.nextPastProgress())
                #expect(next.event == "change" && next.data.contains(cable.id.description), "\(next)")

                let otto = try await SSEReader(server: server, token: app.otherEditor, query: "topics=navigation&since=now")
                let tab = #"{"command":{"selectTab":{"tab":"settings"}}}"#
                _ = try await server.request(.POST, "/v1/clients/ottos-phone/commands", token: app.otherEditor, json: tab)
                let ottosFirst = try await otto.changes(1)
                #expect(ottosFirst.map(\.change.id) == ["ottos-phone"])
                try await hiddenWrites(thenTrimmedPast: try #require(ottosFirst.first?.id))
                _ = try await server.request(.POST, "/v1/clients/ottos-phone/commands", token: app.otherEditor, json: #"{"command":{"selectTab":{"tab":"inventory"}}}"#)
                let ottos = try #require(try await otto.nextPastProgress())
                #expect(ottos.event == "change" && ottos.data.contains("ottos-phone"), "\(ottos)")

                let received = ReceivedMessages()
                try await WebSocketClient.connect(
                    url: "ws://127.0.0.1:\(server.port)/v1/changes/ws?topics=items&since=now&filter=\(filter)&access_token=\(app.viewer)",
                    logger: Logger(label: "test")
                ) { inbound, outbound, _ in
                    var messages = inbound.messages(maxSize: 1 << 20).makeAsyncIterator()
                    let lamp = try await Self.create(server, app, name: "Lamp", quantity: 1)
                    let first = try await messages.nextText()
                    received.append(first)
                    try await hiddenWrites(thenTrimmedPast: try FeedChange.decode(first).cursor)
                    try await Self.update(server, app, lamp, quantity: 2)
                    let second = try await messages.nextTextPastProgress()
                    received.append(second)
                    // Its filter changed in place after another trim: the delta, from past the trim.
                    try await hiddenWrites(thenTrimmedPast: try FeedChange.decode(second).cursor)
                    try await outbound.write(.text(#"{"setFilter":{"filter":"name = \"Lamp\" or name = \"Crate 5\""}}"#))
                    received.append(try await messages.nextTextPastProgress())
                    try await outbound.close(.normalClosure, reason: nil)
                }
                let all = received.all
                try #require(all.count == 3)
                let changes = all.prefix(2).compactMap { try? FeedChange.decode($0) }
                #expect(changes.count == 2 && changes[0].id == changes[1].id, "\(all)")
                struct Refiltered: Decodable { let refilter: Delta }
                let refilter = try JSONCoding.decoder().decode(Refiltered.self, from: Data(all[2].utf8)).refilter
                // Lamp matches both and is unchanged: not sent; Cable matched the old filter only.
                #expect(refilter.items.map(\.name) == Array(repeating: "Crate 5", count: 4) && refilter.removed == [cable.id], "\(all[2])")
            }
        }
    }

    /// A stream whose topics hide the writes (items, to a `topics=navigation` stream) still moves
    /// its cursor: SSE's `event: progress` and the WebSocket's `{"progress": …}` carry the head,
    /// so that a reconnect after the log was trimmed past where the stream started is served from
    /// there, not refused `410`.
    @Test func aStreamWhoseTopicsHideTheWritesAnnouncesItsCursor() async throws {
        var settings = Self.trimming
        settings["feed.heartbeatSeconds"] = .init(.int(1), isSecret: false)
        try await withTestApp { app in
            try await app.live(settings: settings) { client in
                let server = LiveServer(port: try #require(client.port))
                let start = try await Self.page(server, app, "since=now").cursor
                let sse = try await SSEReader(server: server, token: app.otherEditor, query: "topics=navigation&since=\(Self.encoded(start))")
                #expect(sse.status == 200)
                for index in 0..<6 { _ = try await Self.create(server, app, name: "Crate \(index)", quantity: 50) }
                let head = try await Self.page(server, app, "since=now").cursor
                try await eventually("the log is trimmed past \(start)", interval: .milliseconds(100)) {
                    try await server.request(.GET, "/v1/changes?since=\(Self.encoded(start))", token: app.editor).status == 410
                }
                // Progress only (idle rounds, heartbeats among them, may come between the writes on
                // a loaded machine), up to the head's; then heartbeats, the log being still.
                let atHead = "id: \(head)\nevent: progress\ndata: {\"cursor\":\"\(head)\"}"
                var seen: [String] = []
                for _ in 0..<60 where seen.last != atHead {
                    seen += try await sse.waitForHeartbeats(sse.heartbeats + 1).map(\.data)
                }
                #expect(!seen.isEmpty && seen.allSatisfy { $0.contains("event: progress") }, "\(seen)")
                #expect(seen.last == atHead, "\(seen)")
                #expect(try await sse.waitForHeartbeats(sse.heartbeats + 2).isEmpty, "nothing after the head's progress")
                let resumed = try await SSEReader(server: server, token: app.otherEditor, query: "topics=navigation&since=\(Self.encoded(head))")
                #expect(resumed.status == 200)

                let received = ReceivedMessages()
                try await WebSocketClient.connect(
                    url: "ws://127.0.0.1:\(server.port)/v1/changes/ws?topics=navigation&since=\(Self.encoded(head))&access_token=\(app.otherEditor)",
                    logger: Logger(label: "test")
                ) { inbound, outbound, _ in
                    var messages = inbound.messages(maxSize: 1 << 20).makeAsyncIterator()
                    // A stream that never announces its cursor ends here, and the test fails, not waits.
                    let limit = Task {
                        try await Task.sleep(for: .seconds(30))
                        try await outbound.close(.normalClosure, reason: nil)
                    }
                    defer { limit.cancel() }
                    _ = try await Self.create(server, app, name: "Lamp", quantity: 1)
                    let next = try await Self.page(server, app, "since=now").cursor
                    var text = try await messages.nextText()
                    while text.hasPrefix(#"{"progress""#), text != #"{"progress":{"cursor":"\#(next)"}}"# { text = try await messages.nextText() }
                    received.append(text)
                    try await outbound.close(.normalClosure, reason: nil)
                }
                let last = try await Self.page(server, app, "since=now").cursor
                #expect(received.all == [#"{"progress":{"cursor":"\#(last)"}}"#])
            }
        }
    }

    /// A long-poll is such a stream while it waits: a trim during its wait that took only entries
    /// its filter hid answers with the change it waited for, its cursor past the trim, not `410`.
    @Test func aLongPollThatTheTrimmedEntriesDidNotConcernAnswersPastThem() async throws {
        try await withTestApp { app in
            try await app.live(settings: Self.trimming) { client in
                let server = LiveServer(port: try #require(client.port))
                let cable = try await Self.create(server, app, name: "Cable", quantity: 3)
                let head = try await Self.page(server, app, "since=now").cursor
                // From the head as the server finds it, so that a poll the server took late is not
                // refused for a trim before it.
                let poll = Task {
                    try await server.request(.GET, "/v1/changes?since=now&wait=60&filter=\(Self.encoded("quantity <= 5"))", token: app.viewer)
                }
                for index in 0..<6 { _ = try await Self.create(server, app, name: "Crate \(index)", quantity: 50) }
                try await eventually("the log is trimmed past \(head)", interval: .milliseconds(100)) {
                    try await server.request(.GET, "/v1/changes?since=\(Self.encoded(head))", token: app.editor).status == 410
                }
                try await Self.update(server, app, cable, quantity: 4)
                let page = try Page.of(try await poll.value)
                #expect(page.changes.map(\.id) == [cable.id.description], "\(page.changes)")
                // Its cursor is one the log still holds.
                #expect(try await server.request(.GET, "/v1/changes?since=\(Self.encoded(page.cursor))", token: app.viewer).status == 200)
            }
        }
    }

    /// The server's own trim, every second, to the last two entries.
    static let trimming: [AbsoluteConfigKey: ConfigValue] = [
        "feed.retention.maxEntries": .init(.int(2), isSecret: false),
        "feed.retention.intervalSeconds": .init(.int(1), isSecret: false),
    ]

    /// Every malformed filter is `422 validationFailed` on its parameter, naming the position, on
    /// every route that takes one; nothing is served.
    @Test(arguments: [
        ("quantity <", 11), ("quantity << 3", 11), ("nme = \"x\"", 1), ("(name = \"x\"", 12), ("name = \"x", 10),
        ("quantity = 1 and", 17), ("name ^= 3", 9), ("", 1), ("status = \"sold\"", 10),
    ])
    func aMalformedFilterIs422NamingItsPosition(filter: String, position: Int) async throws {
        try await withTestApp { app in
            try await app.live { client in
                let server = LiveServer(port: try #require(client.port))
                let encoded = Self.encoded(filter)
                for path in [
                    "/v1/changes?filter=\(encoded)", "/v1/changes/stream?filter=\(encoded)", "/v1/snapshot?filter=\(encoded)",
                    "/v1/snapshot?fromFilter=\(encoded)&since=now",
                ] {
                    let response = try await server.request(.GET, path, token: app.viewer)
                    #expect(response.status == 422, "\(path)")
                    let error = try JSONCoding.decoder().decode(ErrorBody.self, from: response.body)
                    #expect(error.error.code == "validationFailed")
                    #expect(error.error.field == (path.contains("fromFilter") ? "fromFilter" : "filter"))
                    #expect(error.error.message.contains("at character \(position),"), "\(filter): \(error.error.message)")
                }
            }
        }
    }

    /// A filter whose percent escapes do not decode (here bytes that are not UTF-8; the HTTP client
    /// would re-encode a stray `%`) is `400 invalidParameter` on its parameter, on every route that
    /// takes one, before a device of another user (404) is looked at; a `%` of the filter's own,
    /// sent as `%25`, is text.
    @Test func aFilterWhoseEscapesDoNotDecodeIs400() async throws {
        let raw = "quantity%20%3D%201%20or%20name%20%3D%20%22%FF%22"
        try await withTestApp { app in
            try await app.live { client in
                let server = LiveServer(port: try #require(client.port))
                for path in [
                    "/v1/changes?filter=\(raw)", "/v1/changes/stream?filter=\(raw)", "/v1/snapshot?filter=\(raw)",
                    "/v1/snapshot?fromFilter=\(raw)&since=now", "/v1/items/export?filter=\(raw)",
                    "/v1/changes?clientID=someone-elses&filter=\(raw)",
                ] {
                    let response = try await server.request(.GET, path, token: app.viewer)
                    #expect(response.status == 400, "\(path)")
                    let error = try JSONCoding.decoder().decode(ErrorBody.self, from: response.body)
                    #expect(error.error.code == "invalidParameter", "\(path)")
                    #expect(error.error.field == (path.contains("fromFilter") ? "fromFilter" : "filter"))
                }
                let percent = try await server.request(.GET, "/v1/snapshot?filter=\(Self.encoded(#"name = "50% off""#))", token: app.viewer)
                #expect(percent.status == 200)
            }
        }
    }

    /// The snapshot's delta to a new filter, as `GET /v1/snapshot?since=` and a WebSocket's `refilter` send it.
    struct Delta: Decodable {
        let items: [Item]
        let removed: [ItemID]
        let cursor: String
    }

    struct ErrorBody: Decodable {
        struct Detail: Decodable {
            let code: String
            let message: String
            let field: String?
        }
        let error: Detail
    }
}

extension WebSocketInboundMessageStream.AsyncIterator {
    /// The next text message; `CancellationError` when the socket ends first.
    mutating func nextText() async throws -> String {
        while let message = try await next() {
            if case .text(let text) = message { return text }
        }
        throw CancellationError()
    }

    /// The next text message other than `{"progress": …}`, which a filtered WebSocket sends on any
    /// idle round whose cursor its filter moved (so a slow run may see one anywhere).
    mutating func nextTextPastProgress() async throws -> String {
        while true {
            let text = try await nextText()
            if !text.hasPrefix(#"{"progress""#) { return text }
        }
    }
}
