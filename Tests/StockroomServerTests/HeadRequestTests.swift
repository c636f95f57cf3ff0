import Foundation
import HTTPTypes
import Testing

/// `HEAD` on the routes an uptime check, a load balancer or a link checker asks: the `GET`'s status
/// and headers, its `Content-Length` included, and no body, so that the next answer on the
/// connection is whole.
@Suite("HEAD on the operations and inspector routes, against a live server")
struct HeadRequestTests {
    @Test(arguments: ["/health", "/ready", "/metrics", "/openapi.yaml", "/", "/inspector", "/inspector/core.js", "/inspector/inspector.css", "/inspector/icon.svg"])
    func aHeadIsTheGetWithoutItsBody(path: String) async throws {
        try await withTestApp { app in
            try await app.live { client in
                let port = try #require(client.port)
                let get = try await client.send(.get, path)
                #expect(get.status == .ok)
                let head = try await client.send(.head, path)
                #expect(head.status == .ok)
                #expect(head.headers[.contentType] == get.headers[.contentType])
                #expect(head.headers[.contentSecurityPolicy] == get.headers[.contentSecurityPolicy])
                #expect(head.body.readableBytes == 0)
                if path != "/metrics" {  // the metrics' text changes from one read to the next
                    #expect(head.headers[.contentLength] == "\(get.body.readableBytes)")
                }
                // Pipelined on one connection: the HEAD's answer ends at its head, and the GET's follows whole.
                let exchange = try await blocking {
                    try RawSocket(port: port, raw: "HEAD \(path) HTTP/1.1\r\nHost: x\r\n\r\nGET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                        .failingStalledReads().readAll()
                }
                let answers = exchange.components(separatedBy: "HTTP/1.1 ")
                #expect(answers.count == 3, "\(exchange.prefix(600))")
                #expect(answers.dropFirst().first?.hasSuffix("\r\n\r\n") == true, "no body after the HEAD's head: \(exchange.prefix(600))")
                #expect(answers.last?.hasPrefix("200 OK\r\n") == true && answers.last?.hasSuffix(#"{"status":"ok"}"#) == true)
            }
        }
    }

    /// A route without `HEAD` (the item list, a stream) answers it `405` with `Allow`, and with no body
    /// either, so the connection goes on.
    @Test func aHeadWhereNoneIsServedIs405WithoutABody() async throws {
        try await withTestApp { app in
            try await app.live { client in
                let port = try #require(client.port)
                let auth = "Authorization: Bearer \(app.viewer)\r\n"
                let exchange = try await blocking {
                    try RawSocket(
                        port: port,
                        raw: "HEAD /v1/items HTTP/1.1\r\nHost: x\r\n\(auth)\r\nHEAD /v1/changes/stream HTTP/1.1\r\nHost: x\r\n\(auth)\r\n"
                            + "GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
                    ).failingStalledReads().readAll()
                }
                let answers = exchange.components(separatedBy: "HTTP/1.1 ").dropFirst()
                #expect(answers.count == 3, "\(exchange.prefix(800))")
                for answer in answers.prefix(2) {
                    #expect(answer.hasPrefix("405 Method Not Allowed\r\n") && answer.contains("Allow: GET"), "\(answer)")
                    #expect(answer.hasSuffix("\r\n\r\n"), "\(answer)")
                }
                #expect(answers.last?.hasSuffix(#"{"status":"ok"}"#) == true, "\(exchange.prefix(800))")
            }
        }
    }
}
