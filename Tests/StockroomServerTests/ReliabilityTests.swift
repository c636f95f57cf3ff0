import Configuration
import Foundation
import GRDB
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import StockroomCore
import StockroomServer
import StockroomStore
import TestSupport
import Testing

@Suite("Readiness, shutdown and limits")
struct ReliabilityTests {
    /// A full database (capped with `max_page_count`, as a full disk would cap it): `/ready` says
    /// 503 with the reason while writes fail, and 200 again once space returns, without a restart.
    // Its few hundred writes take seconds alone and can take a minute beside the whole suite.
    @Test(.timeLimit(.minutes(10)))
    func readyFollowsWhetherAWriteWouldSucceed() async throws {
        try await withTestApp { app in
            // The migrated schema takes a few dozen pages; the items fill the rest.
            let database = try AppDatabase.open(path: app.databasePath, maxPageCount: 120)
            let settings = try Settings(reader: app.reader())
            let server = buildApplication(settings: settings, database: database, logger: Logger(label: "test"))
            try await server.test(.router) { client in
                #expect(try await client.send(.get, "/ready").status == .ok)

                var refused: TestResponse?
                for index in 0..<5000 {
                    let name = String(repeating: "x", count: 190) + "\(index)"
                    let response = try await client.send(.post, "/v1/items", token: app.editor, json: draftJSON(name: name, color: "Blue"))
                    if response.status != .created {
                        refused = response
                        break
                    }
                }
                let full = try #require(refused, "the capped database never filled up")
                #expect(full.status == .serviceUnavailable)
                #expect(full.errorCode == "unavailable")
                #expect(full.headers[.retryAfter] == "1", "a storage refusal says when to try again")

                let notReady = try await Self.ready(client, until: .serviceUnavailable)
                #expect(notReady.errorCode == "unavailable")
                #expect(notReady.headers[.retryAfter] != nil)
                let message = ((try notReady.json["error"] as? [String: Any])?["message"] as? String) ?? ""
                #expect(message.contains("full"), "\(message)")

                // Space returns: the change log is trimmed (the items stay).
                #expect(try await database.trimChanges(maxAge: .seconds(3600), maxEntries: 1) > 0)
                _ = try await Self.ready(client, until: .ok)
                #expect(try await client.send(.post, "/v1/items", token: app.editor, json: draftJSON(name: "After")).status == .created)
            }
        }
    }

    /// While another process holds the write lock, `/ready` answers 503 with that reason before a
    /// health check's timeout, not after the probe's busy timeout (10 s here), and callers that
    /// come meanwhile share the one probe; once the lock is free it is 200 again.
    @Test(.timeLimit(.minutes(10)))
    func readyAnswersWithinItsPatienceWhileAnotherProcessHoldsTheLock() async throws {
        try await withTestApp { app in
            try await app.test(settings: ["db.busyTimeoutSeconds": .init(.int(10), isSecret: false)]) { client in
                #expect(try await client.send(.get, "/ready").status == .ok)
                var configuration = GRDB.Configuration()
                configuration.allowsUnsafeTransactions = true
                let other = try DatabaseQueue(path: app.databasePath, configuration: configuration)
                try other.inDatabase { db in try db.execute(sql: "BEGIN IMMEDIATE") }
                // Past the cached answer's second.
                try await Task.sleep(for: .milliseconds(1100))
                let answers = try await withThrowingTaskGroup(of: TestResponse.self) { group in
                    for _ in 0..<3 { group.addTask { try await client.send(.get, "/ready") } }
                    return try await group.reduce(into: []) { $0.append($1) }
                }
                try other.inDatabase { db in try db.execute(sql: "ROLLBACK") }
                for answer in answers {
                    #expect(answer.status == .serviceUnavailable && answer.headers[.retryAfter] != nil)
                    let message = ((try answer.json["error"] as? [String: Any])?["message"] as? String) ?? ""
                    #expect(message.contains("write lock"), "\(message)")
                }
                _ = try await Self.ready(client, until: .ok)
            }
        }
    }

    /// Asks `/ready` until it answers `status` (its probe result is cached for a second).
    static func ready(_ client: some TestClientProtocol, until status: HTTPResponse.Status) async throws -> TestResponse {
        var response = try await client.send(.get, "/ready")
        try await eventually("/ready answers \(status)", interval: .milliseconds(100)) {
            response = try await client.send(.get, "/ready")
            return response.status == status
        }
        return response
    }

    static let shortTimeouts: [AbsoluteConfigKey: ConfigValue] = [
        "http.idleTimeoutSeconds": .init(.int(1), isSecret: false),
        "http.headerTimeoutSeconds": .init(.int(1), isSecret: false),
        "feed.heartbeatSeconds": .init(.int(1), isSecret: false),
    ]

    /// A connection that never sends, one that stops in the middle of its headers, and an idle
    /// keep-alive connection are closed by the server; a stream and a long-poll outlive the
    /// idle timeout, since they are not idle.
    @Test(.timeLimit(.minutes(10)))
    func idleAndSlowConnectionsAreClosedButStreamsAreNot() async throws {
        try await withTestApp { app in
            try await app.live(settings: Self.shortTimeouts) { client in
                let port = try #require(client.port)
                let silent = try RawSocket(port: port, path: "", raw: "")
                let halfHeaders = try RawSocket(port: port, path: "", raw: "GET /health HTTP/1.1\r\nHost: x\r\nX-Slow: ")
                let keepAlive = try RawSocket(port: port, path: "/health")
                let sse = try await SSEReader(server: LiveServer(port: port), token: app.editor, query: "since=now")
                let poll = Task { try await LiveServer(port: port).request(.GET, "/v1/changes?since=now&wait=3", token: app.editor) }

                #expect(try await Self.closed(silent) == 0, "nothing came before the close")
                #expect(try await Self.closed(halfHeaders) == 0)
                #expect(try await Self.closed(keepAlive) > 0, "the response came, then the idle close")
                // Three heartbeats a second apart: the stream stayed open past the idle timeout.
                #expect(try await sse.waitForHeartbeats(3).isEmpty)
                #expect(try await poll.value.status == 200)
            }
        }
    }

    /// Reads a raw socket until the server closes it, off the cooperative threads.
    static func closed(_ socket: RawSocket) async throws -> Int {
        let descriptor = socket.descriptor
        return try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread {
                continuation.resume(with: Result { try RawSocket.readUntilClosed(descriptor) })
            }
        }
    }

    /// Past `http.maxConnections` a new connection gets the contract's 503 with Retry-After and is
    /// closed; the refusal is counted in /metrics, and a freed place is taken again.
    @Test(.timeLimit(.minutes(10)))
    func connectionsOverTheCapAreRefusedWith503() async throws {
        try await withTestApp { app in
            let settings: [AbsoluteConfigKey: ConfigValue] = ["http.maxConnections": .init(.int(3), isSecret: false)]
            try await app.live(settings: settings) { client in
                let port = try #require(client.port)
                // Kept-alive connections, each answered before the next opens, so each is counted
                // before the next (the test client may hold one of the three places itself).
                var held: [RawSocket] = []
                var refusal: String?
                for _ in 0..<5 {
                    let socket = try RawSocket(port: port, path: "/health")
                    let answer = try await Self.response(socket)
                    if !answer.hasPrefix("HTTP/1.1 200") {
                        refusal = answer
                        break
                    }
                    held.append(socket)
                }
                #expect(held.count <= 3)
                let answer = try #require(refusal, "no connection was refused")
                #expect(answer.hasPrefix("HTTP/1.1 503"))
                #expect(answer.contains("Retry-After: 1"))
                #expect(answer.contains(#""code":"unavailable""#))
                _ = held.map { shutdown($0.descriptor, Int32(SHUT_RDWR)) }
                // Once the server has seen the held connections go, a new one is served again.
                var metrics = ""
                try await eventually("a new connection is served", interval: .milliseconds(50)) {
                    metrics = try await Self.response(try RawSocket(port: port, path: "/metrics"))
                    return metrics.hasPrefix("HTTP/1.1 200")
                }
                #expect(metrics.contains(#"stockroom_limit_refusals_total{limit="connections"}"#))
            }
        }
    }

    /// Past the per-token or the total subscriber cap a new stream or long-poll is 503 with
    /// Retry-After and the contract's body; other tokens keep their share until the total is reached.
    @Test(.timeLimit(.minutes(10)))
    func feedSubscribersOverACapAreRefusedWith503() async throws {
        try await withTestApp { app in
            let settings: [AbsoluteConfigKey: ConfigValue] = [
                "feed.maxSubscribersPerToken": .init(.int(2), isSecret: false),
                "feed.maxSubscribers": .init(.int(3), isSecret: false),
            ]
            try await app.live(settings: settings) { client in
                let server = LiveServer(port: try #require(client.port))
                let first = try await SSEReader(server: server, token: app.editor, query: "since=now")
                let second = try await SSEReader(server: server, token: app.editor, query: "since=now")
                #expect(first.status == 200 && second.status == 200)
                let third = try await server.request(.GET, "/v1/changes/stream?since=now", token: app.editor)
                #expect(third.status == 503)
                let poll = try await server.request(.GET, "/v1/changes?since=now&wait=1", token: app.editor)
                #expect(poll.status == 503)
                let error = try JSONSerialization.jsonObject(with: poll.body) as? [String: [String: Any]]
                #expect(error?["error"]?["code"] as? String == "unavailable")

                let viewer = try await SSEReader(server: server, token: app.viewer, query: "since=now")
                #expect(viewer.status == 200, "another token has its own share")
                let overTotal = try await server.request(.GET, "/v1/changes/stream?since=now", token: app.otherEditor)
                #expect(overTotal.status == 503, "the total cap")

                let metrics = String(decoding: try await server.request(.GET, "/metrics", token: nil).body, as: UTF8.self)
                #expect(metrics.contains(#"stockroom_limit_refusals_total{limit="subscribersPerToken"} 2"#))
                #expect(metrics.contains(#"stockroom_limit_refusals_total{limit="subscribers"} 1"#))
                _ = (first, second, viewer)
            }
        }
    }

    /// Everything a raw socket receives until the server closes it, off the cooperative threads.
    static func response(_ socket: RawSocket) async throws -> String {
        let descriptor = socket.descriptor
        return try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread {
                continuation.resume(with: Result {
                    var text = Data()
                    var buffer = [UInt8](repeating: 0, count: 65536)
                    while true {
                        let count = recv(descriptor, &buffer, buffer.count, 0)
                        if count <= 0 { return String(decoding: text, as: UTF8.self) }
                        text.append(contentsOf: buffer[0..<count])
                        // A keep-alive answer does not close: a whole response is enough.
                        if let text = String(data: text, encoding: .utf8), let split = text.range(of: "\r\n\r\n"),
                            let length = text[..<split.lowerBound].split(separator: "\r\n")
                                .first(where: { $0.lowercased().hasPrefix("content-length:") })
                                .flatMap({ Int($0.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) }),
                            text.utf8.distance(from: split.upperBound, to: text.endIndex) >= length
                        {
                            return text
                        }
                    }
                })
            }
        }
    }

    /// A malformed `since` beside a valid `Last-Event-ID` is 400 on `since`, as the OpenAPI document
    /// calls such a request invalid, though the header would win.
    @Test(arguments: ["garbage", "c1.xyz.1", "c1.ab.-1"])
    func aMalformedSinceIsRefusedBesideALastEventID(since: String) async throws {
        try await withTestApp { app in
            try await app.test { client in
                let response = try await client.send(
                    .get, "/v1/changes/stream?since=\(since)", token: app.viewer, headers: [HTTPField.Name("Last-Event-ID")!: "now"])
                #expect(response.status == .badRequest)
                #expect(response.errorCode == "invalidParameter")
                #expect(response.errorField == "since")
            }
        }
    }
}
