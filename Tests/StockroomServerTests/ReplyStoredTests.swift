import Foundation
import HTTPTypes
import NIOCore
import Testing

@testable import StockroomServer

/// A decided request's reply as an idempotency record keeps it, and as a retry replays it.
@Suite("Stored replies")
struct ReplyStoredTests {
    @Test func aStoredReplyReplaysItsStatusHeadersAndBodyMarkedReplayed() throws {
        var headers = HTTPFields()
        headers[.contentType] = Reply.jsonContentType
        headers[.eTag] = #""3""#
        headers[.location] = "/v1/items/a\\b"
        let reply = Reply(status: .created, headers: headers, body: ByteBuffer(string: #"{"id":"x"}"#))
        let stored = reply.stored
        // The headers (canonical names) as a JSON object with sorted keys, between the status line and the body.
        #expect(String(decoding: stored.bytes, as: UTF8.self)
            == "201\n{\"content-type\":\"application/json; charset=utf-8\",\"etag\":\"\\\"3\\\"\",\"location\":\"/v1/items/a\\\\b\"}\n{\"id\":\"x\"}")
        let replayed = try Reply(replaying: stored)
        #expect(replayed.status == .created)
        #expect(replayed.headers[.eTag] == #""3""#)
        #expect(replayed.headers[.location] == "/v1/items/a\\b")
        #expect(replayed.headers[.contentType] == Reply.jsonContentType)
        #expect(replayed.headers[Reply.replayedHeader] == "true")
        #expect(replayed.headers.map(\.name.rawName) == headers.map(\.name.rawName) + ["Idempotency-Replayed"], "spelled as the first answer")
        #expect(String(buffer: replayed.body) == #"{"id":"x"}"#)
    }

    @Test func aReplyWithoutHeadersStoresAnEmptyObject() throws {
        let stored = Reply(status: .noContent, headers: [:], body: ByteBuffer()).stored
        #expect(String(decoding: stored.bytes, as: UTF8.self) == "204\n{}\n")
        #expect(try Reply(replaying: stored).status == .noContent)
    }
}
