import Foundation
import Testing

/// `Expect: 100-continue` (RFC 9110 §10.1.1): a client that asks waits for `100 Continue` before it
/// sends its body (curl does for a body over 1 MiB, and waits a second when none comes). The server
/// sends it once the request's head has passed its checks; a request its head dooms gets the final
/// answer instead, before any of its body is sent.
@Suite("Expect: 100-continue, against a live server")
struct ContinueTests {
    static let item = #"{"name":"Continued","color":null,"status":{"inStock":{"quantity":1}}}"#

    static func post(_ token: String, version: String = "1.1") -> String {
        "POST /v1/items HTTP/\(version)\r\nHost: x\r\nAuthorization: Bearer \(token)\r\nContent-Type: application/json\r\n"
            + "Expect: 100-continue\r\nContent-Length: \(item.utf8.count)\r\n\r\n"
    }

    @Test(.timeLimit(.minutes(10)))
    func aRequestThatAsksGets100ContinueBeforeItsBodyIsSent() async throws {
        try await withTestApp { app in
            try await app.live { client in
                let port = try #require(client.port)
                let (interim, final) = try await blocking {
                    let socket = try RawSocket(port: port, raw: Self.post(app.editor)).failingStalledReads()
                    // Nothing of the body has gone: the server answers the head alone.
                    let interim = try socket.readHead()
                    try socket.write(Self.item)
                    return (interim, try socket.readHead())
                }
                #expect(interim == "HTTP/1.1 100 Continue\r\n\r\n")
                #expect(final.hasPrefix("HTTP/1.1 201 Created\r\n"), "\(final)")
                let items = try await client.send(.get, "/v1/items", token: app.editor).json["items"] as? [[String: Any]]
                #expect(try #require(items).contains { $0["name"] as? String == "Continued" })
            }
        }
    }

    /// Behind a request still being answered (a long-poll), the `100 Continue` waits for that answer:
    /// it never lands inside it.
    @Test(.timeLimit(.minutes(10)))
    func aPipelinedRequestGets100ContinueAfterTheAnswersBeforeIt() async throws {
        try await withTestApp { app in
            try await app.live { client in
                let port = try #require(client.port)
                let (first, interim, final) = try await blocking {
                    let poll = "GET /v1/changes?since=now&wait=1 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(app.editor)\r\n\r\n"
                    let socket = try RawSocket(port: port, raw: poll + Self.post(app.editor)).failingStalledReads()
                    let first = try socket.readHead()
                    let length = try #require(first.split(separator: "\r\n").first { $0.lowercased().hasPrefix("content-length:") })
                    let body = try socket.read(count: try #require(Int(length.split(separator: ":")[1].trimmingCharacters(in: .whitespaces))))
                    let interim = try socket.readHead()
                    try socket.write(Self.item)
                    return (first + String(decoding: body, as: UTF8.self), interim, try socket.readHead())
                }
                #expect(first.hasPrefix("HTTP/1.1 200 OK\r\n") && first.contains(#""changes":[]"#), "\(first)")
                #expect(interim == "HTTP/1.1 100 Continue\r\n\r\n")
                #expect(final.hasPrefix("HTTP/1.1 201 Created\r\n"), "\(final)")
            }
        }
    }

    /// No `100 Continue` where none is due: an HTTP/1.0 request (RFC 9110: never to 1.0), or one with
    /// no body to come. The first answer is the final one.
    @Test(.timeLimit(.minutes(10)))
    func noInterimAnswerForHTTP10OrWithoutABody() async throws {
        try await withTestApp { app in
            try await app.live { client in
                let port = try #require(client.port)
                let (old, empty) = try await blocking {
                    let old = try RawSocket(port: port, raw: Self.post(app.editor, version: "1.0") + Self.item).failingStalledReads()
                    let empty = try RawSocket(
                        port: port,
                        raw: "POST /v1/items HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(app.editor)\r\n"
                            + "Content-Type: application/json\r\nExpect: 100-continue\r\nContent-Length: 0\r\n\r\n"
                    ).failingStalledReads()
                    return (try old.readHead(), try empty.readHead())
                }
                #expect(old.hasPrefix("HTTP/1.0 201 Created\r\n"), "\(old)")
                // The empty body is not an item: the final answer is the refusal.
                #expect(empty.hasPrefix("HTTP/1.1 400 Bad Request\r\n"), "\(empty)")
            }
        }
    }

    /// Refused by its head alone (no valid token, a role that may not, a declared length over the
    /// limit, a route that takes no body): the final answer comes at once, with no `100 Continue`,
    /// and the connection closes, since the server cannot tell whether the body would follow.
    @Test(.timeLimit(.minutes(10)))
    func aRequestItsHeadDoomsGetsItsFinalAnswerWithout100Continue() async throws {
        try await withTestApp { app in
            try await app.live { client in
                let port = try #require(client.port)
                let csv = "POST /v1/items/import HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(app.viewer)\r\n"
                    + "Content-Type: text/csv\r\nExpect: 100-continue\r\nContent-Length: 5000000\r\n\r\n"
                let large = "POST /v1/items HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(app.editor)\r\n"
                    + "Content-Type: application/json\r\nExpect: 100-continue\r\nContent-Length: 2000000\r\n\r\n"
                let cases = [
                    (Self.post("not-a-token"), "HTTP/1.1 401 "), (csv, "HTTP/1.1 403 "), (large, "HTTP/1.1 413 "),
                    (Self.post(app.editor).replacingOccurrences(of: "POST /v1/items ", with: "POST /v1/nowhere "), "HTTP/1.1 404 "),
                ]
                for (request, status) in cases {
                    let answer = try await blocking {
                        // The body is never sent: the answer and the close come without it.
                        try RawSocket(port: port, raw: request).failingStalledReads().readToClose()
                    }
                    #expect(answer.hasPrefix(status), "\(answer.prefix(300))")
                    #expect(!answer.contains("100 Continue") && answer.contains("Connection: close"), "\(answer.prefix(300))")
                }
                let items = try await client.send(.get, "/v1/items", token: app.editor).json["items"] as? [[String: Any]]
                #expect(items?.isEmpty == true)
            }
        }
    }

    /// A client that sends its body without waiting gets no `100 Continue` after the fact, and its
    /// connection goes on, even when the request is refused.
    @Test(.timeLimit(.minutes(10)))
    func aBodySentWithoutWaitingIsReadAndTheConnectionGoesOn() async throws {
        try await withTestApp { app in
            try await app.live { client in
                let port = try #require(client.port)
                let answer = try await blocking {
                    let socket = try RawSocket(
                        port: port,
                        raw: Self.post(app.editor) + Self.item + Self.post("not-a-token") + Self.item
                            + "GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
                    ).failingStalledReads()
                    return try socket.readToClose()
                }
                #expect(answer.hasPrefix("HTTP/1.1 201 Created\r\n"), "\(answer.prefix(300))")
                #expect(answer.contains("HTTP/1.1 401 Unauthorized\r\n") && answer.hasSuffix(#"{"status":"ok"}"#), "\(answer)")
                #expect(!answer.contains("100 Continue"), "\(answer)")
            }
        }
    }
}
