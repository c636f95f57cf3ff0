import Configuration
import Foundation
import HTTPTypes
import HummingbirdTesting
import Testing


@Suite("Browser access: CORS headers, against a live server")
struct CORSTests {
    static let allowed = "http://app.test:3000"
    static let second = "https://second.test"
    static let settings: [AbsoluteConfigKey: ConfigValue] = [
        "http.corsAllowedOrigins": .init(.stringArray([allowed, second]), isSecret: false)
    ]

    /// Every CORS header a response carries, by lowercase name.
    static func corsHeaders(_ response: TestResponse) -> [String: String] {
        var found: [String: String] = [:]
        for field in response.headers where field.name.canonicalName.hasPrefix("access-control-") || field.name == .vary {
            found[field.name.canonicalName, default: ""] += field.value
        }
        return found
    }

    static let answerHeaders = [
        "access-control-allow-origin": allowed,
        "access-control-expose-headers": "ETag, Idempotency-Replayed, Retry-After, Location, Stockroom-Cursor, Stockroom-Import, Stockroom-Head",
        "vary": "Origin",
    ]

    @Test func aPreflightFromAnAllowedOriginIs204WithTheContractsHeaders() async throws {
        try await withTestApp { app in
            try await app.live(settings: Self.settings) { client in
                let response = try await client.send(
                    .options, "/v1/items/\(UUID())",
                    headers: [.origin: Self.allowed, .accessControlRequestMethod: "PUT", .accessControlRequestHeaders: "authorization, if-match"])
                #expect(response.status == .noContent)
                #expect(Self.corsHeaders(response) == [
                    "access-control-allow-origin": Self.allowed,
                    // Hummingbird writes header names in lower case; they are case-insensitive.
                    "access-control-allow-headers": "authorization, content-type, if-match, idempotency-key, last-event-id",
                    "access-control-allow-methods": "GET, POST, PUT, DELETE",
                    "access-control-expose-headers": "ETag, Idempotency-Replayed, Retry-After, Location, Stockroom-Cursor, Stockroom-Import, Stockroom-Head",
                    // Kept by the browser for two hours (Chromium's cap), not re-asked before each request.
                    "access-control-max-age": "7200",
                    "vary": "Origin",
                ])
            }
        }
    }

    @Test func successesErrorsAndUnknownRoutesAnsweredToAnAllowedOriginAllEchoIt() async throws {
        try await withTestApp { app in
            try await app.live(settings: Self.settings) { client in
                let origin: HTTPFields = [.origin: Self.allowed]
                let created = try await client.send(.post, "/v1/items", token: app.editor, json: draftJSON(name: "Lamp"), headers: origin)
                #expect(created.status == .created)
                #expect(created.headers[.location] != nil)
                #expect(Self.corsHeaders(created) == Self.answerHeaders)
                let unauthorized = try await client.send(.get, "/v1/items", headers: origin)
                #expect(unauthorized.status == .unauthorized && unauthorized.errorCode == "unauthorized")
                #expect(Self.corsHeaders(unauthorized) == Self.answerHeaders)
                let missing = try await client.send(.get, "/v1/nothing-here", token: app.editor, headers: origin)
                #expect(missing.status == .notFound && missing.errorCode == "notFound")
                #expect(Self.corsHeaders(missing) == Self.answerHeaders)
                // An export's cursor is an answer header a page must read to follow the feed from it.
                let export = try await client.send(.get, "/v1/items/export", token: app.viewer, headers: origin)
                #expect(export.status == .ok && export.headers[HTTPField.Name("Stockroom-Cursor")!] != nil)
                #expect(Self.corsHeaders(export) == Self.answerHeaders)
                let exposed = try #require(export.headers[.accessControlExposeHeaders]).split(separator: ", ").map(String.init)
                #expect(exposed.contains("Stockroom-Cursor"))
                let second = try await client.send(.get, "/health", headers: [.origin: Self.second])
                #expect(second.headers[.accessControlAllowOrigin] == Self.second)
            }
        }
    }

    @Test func anSSEStreamAnsweredToAnAllowedOriginEchoesIt() async throws {
        try await withTestApp { app in
            try await app.live(settings: Self.settings) { client in
                let port = try #require(client.port)
                let request = "GET /v1/changes/stream?since=now HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(app.viewer)\r\nOrigin: \(Self.allowed)\r\n\r\n"
                // Only the head: the stream stays open.
                let head = try await blocking { try RawSocket(port: port, raw: request).failingStalledReads().readHead() }
                #expect(head.hasPrefix("HTTP/1.1 200 OK\r\n"))
                #expect(head.contains("Content-Type: text/event-stream; charset=utf-8\r\n"))
                #expect(head.contains("Access-Control-Allow-Origin: \(Self.allowed)\r\n") && head.contains("Vary: Origin\r\n"))
            }
        }
    }

    /// No CORS header for any other origin, nor without one; only `Vary: Origin`, so that a cache
    /// does not hand such an answer to an allowed origin.
    @Test(arguments: ["http://elsewhere.test", "http://app.test:3001", "null", "HTTP://APP.TEST:3000", nil])
    func anyOtherOriginGetsNoCORSHeaders(origin: String?) async throws {
        try await withTestApp { app in
            try await app.live(settings: Self.settings) { client in
                var headers: HTTPFields = [.accessControlRequestMethod: "POST"]
                headers[.origin] = origin
                let preflight = try await client.send(.options, "/v1/items", headers: headers)
                #expect(preflight.status == .methodNotAllowed && preflight.errorCode == "methodNotAllowed")
                #expect(Self.corsHeaders(preflight) == ["vary": "Origin"])
                var originOnly = HTTPFields()
                originOnly[.origin] = origin
                let items = try await client.send(.get, "/v1/items", token: app.viewer, headers: originOnly)
                #expect(items.status == .ok)
                #expect(Self.corsHeaders(items) == ["vary": "Origin"])
            }
        }
    }

    @Test func withoutTheSettingNoOriginGetsCORSHeaders() async throws {
        try await withTestApp { app in
            try await app.live { client in
                let preflight = try await client.send(.options, "/v1/items", headers: [.origin: Self.allowed, .accessControlRequestMethod: "GET"])
                #expect(preflight.status == .methodNotAllowed)
                #expect(Self.corsHeaders(preflight) == [:])
                let items = try await client.send(.get, "/v1/items", token: app.viewer, headers: [.origin: Self.allowed])
                #expect(items.status == .ok && Self.corsHeaders(items) == [:])
            }
        }
    }
}
