import Configuration
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import HummingbirdWSClient
import Logging
import NIOWebSocket
import StockroomCore
import StockroomPostgres
import StockroomServer
import StockroomWire
import TestSupport
import Testing

/// The contract's routes with `db.url` set: the same server on PostgreSQL, live on loopback.
@Suite("Routes on PostgreSQL", .enabled(if: TestPostgres.isAvailable, "PostgreSQL 15 is not installed"))
struct PostgresRouteTests {
    /// A new database with an editor token for erin and one for otto, and the settings of a server on it.
    static func database() async throws -> (url: String, erin: String, otto: String) {
        let url = try await TestPostgres.shared().newDatabase()
        let store = try await PostgresStore.open(url: PostgresURL(url), deadline: TestPostgres.storeDeadline)
        let running = Task { try await store.run() }
        defer { running.cancel() }
        let erin = try await store.createToken(user: "erin", role: .editor).secret
        let otto = try await store.createToken(user: "otto", role: .editor).secret
        running.cancel()
        _ = await running.result
        return (url, erin, otto)
    }

    /// A PostgreSQL server of the test's own (which it may stop), its database, and an editor token for erin.
    static func ownServer() async throws -> (postgres: TestPostgres, url: String, erin: String) {
        let postgres = try await TestPostgres.start()
        do {
            try await postgres.createDatabase("stockroom")
            let url = postgres.url(database: "stockroom")
            let store = try await PostgresStore.open(url: PostgresURL(url), deadline: TestPostgres.storeDeadline)
            let running = Task { try await store.run() }
            let erin = try await store.createToken(user: "erin", role: .editor).secret
            running.cancel()
            _ = await running.result
            return (postgres, url, erin)
        } catch {
            postgres.stop()
            throw error
        }
    }

    static func reader(url: String, extra: [AbsoluteConfigKey: ConfigValue] = [:]) -> ConfigReader {
        var values: [AbsoluteConfigKey: ConfigValue] = [
            "db.url": .init(.string(url), isSecret: true),
            "http.port": .init(.int(0), isSecret: false),
            "log.level": .init(.string("error"), isSecret: false),
        ]
        values.merge(extra) { $1 }
        return ConfigReader(provider: InMemoryProvider(values: values))
    }

    /// `stockroom migrate` on PostgreSQL prints the current migration and nothing else: no
    /// postgres-nio warning about a pool leased before it runs.
    @Test(.timeLimit(.minutes(10)))
    func migrateSaysTheMigrationAndNothingElse() async throws {
        let (url, _, _) = try await Self.database()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("stockroom-migrate-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let result = try await StockroomProcess.run(["migrate"], in: directory, environment: ["DB_URL": url])
        #expect(result.status == 0)
        #expect(result.output.hasPrefix("Database is at migration "), "\(result.output)")
        #expect(!result.error.contains("PostgresClient"), "\(result.error)")
    }

    @Test(.timeLimit(.minutes(10)))
    func itemsCommandsAndTheFeedWorkAsOnSQLite() async throws {
        let (url, erin, otto) = try await Self.database()
        let app = try await buildApplication(reader: Self.reader(url: url, extra: ["demo": .init(.bool(true), isSecret: false)]))
        try await app.test(.live) { client in
            // Ready once its probe answers within the probe's bound, which a full test run's busy
            // machine can make a first probe miss.
            try await eventually("the server is ready", interval: .milliseconds(100)) {
                try await client.send(.get, "/ready").status == .ok
            }
            // The demo items were seeded once the pool ran.
            let seeded = try await client.send(.get, "/v1/items", token: erin).json["items"] as? [Any]
            #expect(seeded?.count == 4)

            let keyboard = try await client.createItem("Keyboard", quantity: 3, token: erin)
            let stale = try await client.send(
                .put, "/v1/items/\(keyboard.id)", token: erin, json: draftJSON(name: "Keys", quantity: 1), headers: [.ifMatch: "\"9\""])
            #expect(stale.status == .preconditionFailed)

            // Edit, then save: the item changes once, with an idempotent retry replayed.
            _ = try await client.command(#"{"openEdit":{"itemID":"\#(keyboard.id)"}}"#, clientID: "phone", token: erin)
            _ = try await client.command(
                #"{"updateDraft":{"draft":{"name":"Keys","color":null,"status":{"inStock":{"quantity":9}}}}}"#, clientID: "phone", token: erin)
            let saved = try await client.command(#"{"save":{}}"#, clientID: "phone", token: erin, idempotencyKey: "save-1")
            #expect(saved.status == .ok)
            let replayed = try await client.command(#"{"save":{}}"#, clientID: "phone", token: erin, idempotencyKey: "save-1")
            #expect(replayed.status == .ok && replayed.body == saved.body)
            let item: Item = try await client.send(.get, "/v1/items/\(keyboard.id)", token: erin).decode()
            #expect(item.name == "Keys" && item.version == 2)

            // Another user cannot see erin's device.
            #expect(try await client.send(.get, "/v1/clients/phone/navigation", token: otto).status == .notFound)

            // The feed from the beginning: the seeds, the item, erin's navigation, the save, in order.
            let batch: FeedBatch = try await client.send(.get, "/v1/changes", token: erin).decode()
            #expect(batch.changes.map(\.seq) == Array(1...batch.changes.count))
            #expect(batch.changes.suffix(2).map(\.entity) == ["item", "navigation"], "the save: the item, then the closed sheet")
            let snapshot = try await client.send(.get, "/v1/snapshot", token: erin)
            #expect(snapshot.status == .ok)
            let decoded: Snapshot = try snapshot.decode()
            #expect(decoded.items.count == 5 && decoded.navigation.map(\.clientID) == ["phone"])
            #expect(decoded.cursor.encoded == batch.cursor)

            // A revoked token is refused.
            let admin = try await PostgresRouteTests.revokeOttoAndAnswer(client: client, url: url, otto: otto)
            #expect(admin == .unauthorized)
        }
    }

    /// Revokes otto's token through a second store (another daemon) and asks with it.
    static func revokeOttoAndAnswer(client: any TestClientProtocol, url: String, otto: String) async throws -> HTTPResponse.Status {
        let store = try await PostgresStore.open(url: PostgresURL(url), deadline: TestPostgres.storeDeadline)
        let running = Task { try await store.run() }
        defer { running.cancel() }
        let id = try #require(try await store.authenticate(secret: otto)?.id)
        #expect(try await store.revokeToken(id: id))
        var status: HTTPResponse.Status = .ok
        try await eventually("the server refuses otto's token") {
            status = try await client.send(.get, "/v1/items", token: otto).status
            return status == .unauthorized
        }
        return status
    }

    /// As on SQLite (`FilteredFeedRouteTests`): an SSE stream whose filter hid every entry the
    /// server's trim took goes on with the next change it shows, and a long-poll waiting under
    /// the filter answers with it.
    @Test(.timeLimit(.minutes(10)))
    func aStreamThatTheTrimmedEntriesDidNotConcernGoesOn() async throws {
        let (url, erin, _) = try await Self.database()
        let app = try await buildApplication(
            reader: Self.reader(
                url: url,
                extra: [
                    "feed.retention.maxEntries": .init(.int(2), isSecret: false),
                    "feed.retention.intervalSeconds": .init(.int(1), isSecret: false),
                ]))
        try await app.test(.live) { client in
            let server = LiveServer(port: try #require(client.port))
            let filter = FilteredFeedRouteTests.encoded("quantity <= 5")
            let sse = try await SSEReader(server: server, token: erin, query: "topics=items&filter=\(filter)&since=now")
            #expect(sse.status == 200)
            let cable = try await client.createItem("Cable", quantity: 3, token: erin)
            let first = try await sse.changes(1)
            #expect(first.map(\.change.id) == [cable.id.description])
            for index in 0..<6 { _ = try await client.createItem("Crate \(index)", quantity: 50, token: erin) }
            let cursor = FilteredFeedRouteTests.encoded(try #require(first.first?.id))
            try await eventually("the log is trimmed past the stream", interval: .milliseconds(100)) {
                try await server.request(.GET, "/v1/changes?since=\(cursor)", token: erin).status == 410
            }
            let updated = try await server.request(.PUT, "/v1/items/\(cable.id)", token: erin, json: draftJSON(name: "Cable", quantity: 4))
            #expect(updated.status == 200)
            let next = try #require(try await sse.nextPastProgress())
            #expect(next.event == "change" && next.data.contains(cable.id.description), "\(next)")

            // A long-poll waiting under the filter, the same.
            let head = try FilteredFeedRouteTests.Page.of(try await server.request(.GET, "/v1/changes?since=now", token: erin))
            let headCursor = FilteredFeedRouteTests.encoded(head.cursor)
            let poll = Task { try await server.request(.GET, "/v1/changes?since=now&wait=60&filter=\(filter)", token: erin) }
            for index in 6..<12 { _ = try await client.createItem("Crate \(index)", quantity: 50, token: erin) }
            try await eventually("the log is trimmed past the poll", interval: .milliseconds(100)) {
                try await server.request(.GET, "/v1/changes?since=\(headCursor)", token: erin).status == 410
            }
            let again = try await server.request(.PUT, "/v1/items/\(cable.id)", token: erin, json: draftJSON(name: "Cable", quantity: 5))
            #expect(again.status == 200)
            #expect(try FilteredFeedRouteTests.Page.of(try await poll.value).changes.map(\.id) == [cable.id.description])
        }
    }

    @Test
    func aBadDatabaseURLIsAUsageErrorNamingTheSetting() async throws {
        #expect(throws: SettingsError.self) {
            try Settings(reader: Self.reader(url: "mysql://root@localhost/db"))
        }
        do {
            _ = try Settings(reader: Self.reader(url: "postgres://user:secret@host:70000/db"))
            Issue.record("a port out of range was accepted")
        } catch let error as SettingsError {
            #expect(error.description.contains("db.url") && error.description.contains("DB_URL"))
            #expect(!error.description.contains("secret"), "the password is not echoed")
        }
    }

    /// PostgreSQL restarted under a running server: meanwhile `/ready` and writes answer 503
    /// (never a 500), and afterwards the server is back by itself, its feed continuing.
    @Test(.timeLimit(.minutes(10)))
    func whilePostgreSQLIsDownTheServerAnswers503AndRecoversWithoutARestart() async throws {
        let (postgres, url, erin) = try await Self.ownServer()
        defer { postgres.stop() }
        let app = try await buildApplication(reader: Self.reader(url: url))
        try await app.test(.live) { client in
            // The first probe also opens a connection, and answers 503 past its two seconds (a loaded machine).
            _ = try await ReliabilityTests.ready(client, until: .ok)
            _ = try await client.createItem("Before", token: erin)

            try await postgres.pause()
            try await eventually("/ready says 503", timeout: .seconds(30), interval: .milliseconds(100)) {
                try await client.send(.get, "/ready").status == .serviceUnavailable
            }
            let write = try await client.send(.post, "/v1/items", token: erin, json: draftJSON(name: "During"))
            #expect(write.status == .serviceUnavailable)
            #expect(write.errorCode == "unavailable")
            #expect(write.headers[.retryAfter] == "1")

            try await postgres.resume()
            try await eventually("/ready says 200 again", timeout: .seconds(60), interval: .milliseconds(100)) {
                try await client.send(.get, "/ready").status == .ok
            }
            _ = try await client.createItem("After", token: erin)
            let batch: FeedBatch = try await client.send(.get, "/v1/changes", token: erin).decode()
            #expect(batch.changes.map(\.seq) == [1, 2], "the write refused while it was down is not in the log")
        }
    }

    /// PostgreSQL stopped under open streams: at its next round (an idle one asks the database
    /// whether its token holds) an SSE stream ends with the contract's `unavailable` error event and
    /// its last chunk, and a WebSocket closes with 4503; neither connection is just dropped.
    @Test(.timeLimit(.minutes(10)))
    func openStreamsEndWithUnavailableWhenPostgreSQLStops() async throws {
        let (postgres, url, erin) = try await Self.ownServer()
        defer { postgres.stop() }
        let app = try await buildApplication(reader: Self.reader(url: url, extra: ["feed.heartbeatSeconds": .init(.int(1), isSecret: false)]))
        try await app.test(.live) { client in
            _ = try await ReliabilityTests.ready(client, until: .ok)
            let server = LiveServer(port: try #require(client.port))
            let sse = try await SSEReader(server: server, token: erin, query: "since=now")
            #expect(sse.status == 200)
            let received = ReceivedMessages()
            let socket = Task {
                try await WebSocketClient.connect(
                    url: "ws://127.0.0.1:\(server.port)/v1/changes/ws?since=now&access_token=\(erin)", logger: Logger(label: "test")
                ) { inbound, _, _ in
                    received.append("upgraded")
                    for try await message in inbound.messages(maxSize: 1 << 20) {
                        if case .text(let text) = message { received.append(text) }
                    }
                }
            }
            // `since=now` was resolved before the upgrade's answer.
            try await eventually("the WebSocket is open", interval: .milliseconds(50)) { received.count == 1 }
            let item = try await client.createItem("Before", token: erin)
            #expect(try await sse.changes(1).map(\.change.id) == [item.id.description])
            try await eventually("the WebSocket has the item", interval: .milliseconds(50)) { received.count == 2 }

            try await postgres.pause()
            var events: [SSEReader.Event] = []
            while let event = try await sse.next() { events.append(event) }
            #expect(events.last?.event == "error", "\(events.map(\.event))")
            #expect(events.last?.data.contains(#""code":"unavailable""#) == true, "\(events.last?.data ?? "")")
            let frame = try await socket.value
            #expect(frame?.closeCode == WebSocketErrorCode(codeNumber: 4503))
            #expect(frame?.reason?.contains("unavailable") == true)
            try await postgres.resume()
        }
    }
}
