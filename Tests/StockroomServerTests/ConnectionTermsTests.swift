import Foundation
import Testing

/// HTTP/1's connection terms (RFC 9112 §9.3 and §6.1), on raw sockets against a live server: a
/// connection whose request asked it to end ends after the answer, and an HTTP/1.0 client, which
/// has no chunked framing, gets its answers in HTTP/1.0.
@Suite("Connection terms of HTTP/1.0 and HTTP/1.1, against a live server")
struct ConnectionTermsTests {
    /// An HTTP/1.0 request without `keep-alive`: the answer is HTTP/1.0's and the server closes
    /// the connection after it (a client that reads to the end would otherwise wait out the idle timeout).
    @Test(.timeLimit(.minutes(10)))
    func anHTTP10RequestIsAnsweredInHTTP10AndItsConnectionEnds() async throws {
        try await withTestApp { app in
            try await app.live { client in
                let port = try #require(client.port)
                let answer = try await blocking {
                    try RawSocket(port: port, raw: "GET /v1/items HTTP/1.0\r\nAuthorization: Bearer \(app.viewer)\r\n\r\n")
                        .failingStalledReads().readToClose()
                }
                #expect(answer.hasPrefix("HTTP/1.0 200 OK\r\n"), "\(answer)")
                #expect(answer.contains("\r\nConnection: close\r\n"))
                #expect(answer.contains(#""items":["#))
            }
        }
    }

    /// A `close` token ends the connection whatever its case and whatever else the header lists,
    /// and the answer says so.
    @Test(.timeLimit(.minutes(10)), arguments: ["Close", "close, TE", "CLOSE"])
    func aCloseTokenEndsTheConnection(connection: String) async throws {
        try await withTestApp { app in
            try await app.live { client in
                let port = try #require(client.port)
                let answer = try await blocking {
                    try RawSocket(port: port, raw: "GET /health HTTP/1.1\r\nHost: x\r\nConnection: \(connection)\r\nTE: trailers\r\n\r\n")
                        .failingStalledReads().readToClose()
                }
                #expect(answer.hasPrefix("HTTP/1.1 200 OK\r\n"), "\(answer)")
                #expect(answer.contains("\r\nConnection: close\r\n"), "\(answer)")
            }
        }
    }

    /// A request asking to upgrade to something other than a WebSocket (h2c, as `curl --http2`
    /// asks) is answered in HTTP/1.1, and its connection ends with that answer: the HTTP decoder
    /// reads nothing after such a head, and a request pipelined behind it would wait forever.
    @Test(.timeLimit(.minutes(10)))
    func anUpgradeToAnotherProtocolIsAnsweredAndItsConnectionEnds() async throws {
        try await withTestApp { app in
            try await app.live { client in
                let port = try #require(client.port)
                let h2c = "GET /health HTTP/1.1\r\nHost: x\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\n"
                    + "HTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n\r\n"
                let answer = try await blocking {
                    try RawSocket(port: port, raw: h2c + "GET /health HTTP/1.1\r\nHost: x\r\n\r\n").failingStalledReads().readToClose()
                }
                #expect(answer.hasPrefix("HTTP/1.1 200 OK\r\n") && answer.contains("\r\nConnection: close\r\n"), "\(answer)")
                #expect(answer.components(separatedBy: "HTTP/1.1 ").count == 2 && answer.hasSuffix(#"{"status":"ok"}"#), "\(answer)")
            }
        }
    }

    /// Pipelined: a kept-alive request, one that closes, and one after it. The first two are
    /// answered, only the second says `close`, and the third is never answered.
    @Test(.timeLimit(.minutes(10)))
    func theConnectionEndsWithTheAnswerOfTheRequestThatAskedItTo() async throws {
        try await withTestApp { app in
            try await app.live { client in
                let port = try #require(client.port)
                let health = "GET /health HTTP/1.1\r\nHost: x\r\n"
                let answer = try await blocking {
                    try RawSocket(port: port, raw: health + "\r\n" + health + "Connection: close\r\n\r\n" + health + "\r\n")
                        .failingStalledReads().readToClose()
                }
                let heads = answer.components(separatedBy: "HTTP/1.1 ").dropFirst()
                #expect(heads.count == 2, "\(answer)")
                #expect(heads.first.map { !$0.contains("Connection:") } == true, "\(answer)")
                #expect(heads.last?.contains("\r\nConnection: close\r\n") == true, "\(answer)")
            }
        }
    }

    /// An HTTP/1.0 client that asks for `keep-alive` keeps its connection while the answers have a
    /// length, and each answer says so.
    @Test(.timeLimit(.minutes(10)))
    func anHTTP10ClientThatAsksKeepsItsConnection() async throws {
        try await withTestApp { app in
            try await app.live { client in
                let port = try #require(client.port)
                let request = "GET /health HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"
                let answers = try await blocking {
                    let socket = try RawSocket(port: port, raw: request + request).failingStalledReads()
                    var answers = [try socket.readAnswerWithLength(), try socket.readAnswerWithLength()]
                    // Still open: a third request on it is answered.
                    try socket.write(request)
                    answers.append(try socket.readAnswerWithLength())
                    return answers
                }
                for answer in answers {
                    #expect(answer.hasPrefix("HTTP/1.0 200 OK\r\n"), "\(answer)")
                    #expect(answer.contains("\r\nConnection: keep-alive\r\n"), "\(answer)")
                    #expect(answer.hasSuffix(#"{"status":"ok"}"#), "\(answer)")
                }
            }
        }
    }

    /// An answer streamed with no length (a snapshot) to HTTP/1.0 is not chunked: its body is the
    /// bytes, and the connection's end ends it, even for a client that asked to keep it.
    @Test(.timeLimit(.minutes(10)))
    func anHTTP10AnswerOfUnknownLengthIsBareBytesEndedByTheConnection() async throws {
        try await withTestApp { app in
            try await app.live { client in
                let port = try #require(client.port)
                _ = try await client.send(.post, "/v1/items", token: app.editor, json: draftJSON(name: "Bare"))
                let answer = try await blocking {
                    let snapshot = "GET /v1/snapshot HTTP/1.0\r\nConnection: keep-alive\r\nAuthorization: Bearer \(app.viewer)\r\n\r\n"
                    return try RawSocket(port: port, raw: snapshot + "GET /health HTTP/1.0\r\n\r\n").failingStalledReads().readToClose()
                }
                let parts = answer.components(separatedBy: "\r\n\r\n")
                let head = parts[0]
                #expect(head.hasPrefix("HTTP/1.0 200 OK\r\n"), "\(head)")
                #expect(!head.lowercased().contains("transfer-encoding"), "\(head)")
                #expect(head.contains("\r\nConnection: close"), "\(head)")
                // The body is the snapshot's JSON as it is, and nothing follows it: the request behind it went unanswered.
                let body = parts.dropFirst().joined(separator: "\r\n\r\n")
                let json = try #require(try JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any], "\(body.prefix(300))")
                #expect((json["items"] as? [[String: Any]])?.contains { $0["name"] as? String == "Bare" } == true)
            }
        }
    }

    /// The change stream to an HTTP/1.0 client: its events as they are, with no chunk sizes between them.
    @Test(.timeLimit(.minutes(10)))
    func anHTTP10EventStreamCarriesBareEvents() async throws {
        try await withTestApp { app in
            try await app.live { client in
                let port = try #require(client.port)
                let socket = OneAtATime(
                    try RawSocket(
                        port: port, raw: "GET /v1/changes/stream?since=now&topics=items HTTP/1.0\r\nAuthorization: Bearer \(app.viewer)\r\n\r\n"
                    ).failingStalledReads())
                let head = try await blocking { try socket.readHead() }
                #expect(head.hasPrefix("HTTP/1.0 200 OK\r\n"), "\(head)")
                #expect(!head.lowercased().contains("transfer-encoding"), "\(head)")
                _ = try await client.send(.post, "/v1/items", token: app.editor, json: draftJSON(name: "Streamed"))
                let body = try await blocking {
                    var text = ""
                    while !text.contains(#""name":"Streamed""#) { text += try socket.readUntil("\n\n") }
                    return text
                }
                // Comment, then event: the first bytes of the body are the stream's own, not a chunk size.
                #expect(body.hasPrefix(": "), "\(body)")
                #expect(body.contains("\n\nid: "), "\(body)")
                #expect(body.contains("\nevent: change\ndata: {"), "\(body)")
                #expect(!body.contains("\r\n"), "\(body)")
            }
        }
    }
}

extension RawSocket {
    /// One answer framed by its `Content-Length`: its head and body.
    func readAnswerWithLength() throws -> String {
        let head = try readHead()
        let field = try #require(head.split(separator: "\r\n").first { $0.lowercased().hasPrefix("content-length:") }, "\(head)")
        let length = try #require(Int(field.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)))
        return head + String(decoding: try read(count: length), as: UTF8.self)
    }
}
