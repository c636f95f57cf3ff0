import AsyncHTTPClient
import Foundation
import Hummingbird
import HummingbirdWSClient
import Logging
import NIOWebSocket
import StockroomStorage
import Testing

/// A revoked token stops at once, open streams included (issue #14, point 2).
@Suite("Revocation ends open streams")
struct RevocationTests {
    static func viewerToken(_ app: TestApp) async throws -> IssuedToken {
        try await app.database.createToken(user: "vic", role: .viewer)
    }

    @Test func anSSEStreamOfARevokedTokenEndsWithUnauthorized() async throws {
        try await withTestApp { app in
            let token = try await Self.viewerToken(app)
            try await app.live { client in
                let server = LiveServer(port: try #require(client.port))
                let reader = try await SSEReader(server: server, token: token.secret, query: "since=now")
                _ = try await server.request(.POST, "/v1/items", token: app.editor, json: draftJSON(name: "Before"))
                #expect(try await reader.changes(1).map(\.change.item?.name) == ["Before"])

                let revoked = try await server.request(.DELETE, "/v1/tokens/\(token.info.id)", token: app.admin)
                #expect(revoked.status == 204)
                let ending = try #require(try await reader.next())
                #expect(ending.event == "error")
                #expect(ending.data.contains(#""code":"unauthorized""#))
                _ = try await server.request(.POST, "/v1/items", token: app.editor, json: draftJSON(name: "After"))
                #expect(try await reader.next() == nil, "the stream ended; nothing after the revocation")
            }
        }
    }

    /// Revoked by another process (the CLI opens its own pool): the next change is not delivered.
    @Test func aRevocationByAnotherProcessStopsTheNextChange() async throws {
        try await withTestApp { app in
            let token = try await Self.viewerToken(app)
            try await app.live { client in
                let server = LiveServer(port: try #require(client.port))
                let reader = try await SSEReader(server: server, token: token.secret, query: "since=now")
                _ = try await server.request(.POST, "/v1/items", token: app.editor, json: draftJSON(name: "Before"))
                #expect(try await reader.changes(1).count == 1)
                #expect(try await app.database.revokeToken(id: token.info.id))
                _ = try await server.request(.POST, "/v1/items", token: app.editor, json: draftJSON(name: "After"))
                let ending = try #require(try await reader.next())
                #expect(ending.event == "error", "got \(ending)")
                #expect(ending.data.contains(#""code":"unauthorized""#))
                #expect(try await reader.next() == nil)
            }
        }
    }

    @Test func aWebSocketOfARevokedTokenClosesWith4401() async throws {
        try await withTestApp { app in
            let token = try await Self.viewerToken(app)
            try await app.live { client in
                let server = LiveServer(port: try #require(client.port))
                let received = ReceivedMessages()
                let frame = try await WebSocketClient.connect(
                    url: "ws://127.0.0.1:\(server.port)/v1/changes/ws?since=now&access_token=\(token.secret)", logger: Logger(label: "test")
                ) { inbound, _, _ in
                    _ = try await server.request(.POST, "/v1/items", token: app.editor, json: draftJSON(name: "Before"))
                    for try await message in inbound.messages(maxSize: 1 << 20) {
                        guard case .text(let text) = message else { continue }
                        received.append(text)
                        if received.count == 1 {
                            _ = try await server.request(.DELETE, "/v1/tokens/\(token.info.id)", token: app.admin)
                            _ = try await server.request(.POST, "/v1/items", token: app.editor, json: draftJSON(name: "After"))
                        }
                    }
                }
                #expect(frame?.closeCode == WebSocketErrorCode(codeNumber: 4401))
                #expect(frame?.reason?.contains("unauthorized") == true)
                #expect(received.count == 1, "nothing after the revocation")
            }
        }
    }

    @Test func aWaitingLongPollOfARevokedTokenAnswers401() async throws {
        try await withTestApp { app in
            let token = try await Self.viewerToken(app)
            try await app.live { client in
                let server = LiveServer(port: try #require(client.port))
                let cursor = try await server.drain(since: nil, token: token.secret).cursor
                let poll = Task { try await server.request(.GET, "/v1/changes?since=\(cursor)&wait=30", token: token.secret) }
                // Whether the revocation lands before or while the poll waits, the answer is 401.
                #expect(try await server.request(.DELETE, "/v1/tokens/\(token.info.id)", token: app.admin).status == 204)
                let response = try await poll.value
                #expect(response.status == 401)
            }
        }
    }
}
