import Configuration
import Foundation
import NIOCore
import NIOHTTP1
import StockroomServer
import TestSupport
import Testing

@Suite("Malformed HTTP, against a live server")
struct MalformedRequestTests {
    /// A head that does not parse is 400 and the connection closes. So is a missing, repeated or
    /// malformed `Host` (RFC 9112 §3.2: an HTTP/1.1 request without one, any request with two, or
    /// one that is not `host[:port]`), saying which: a proxy in front that read the other `Host`
    /// would disagree with the server about the site asked.
    @Test(arguments: [
        ("GET /health?x=a b HTTP/1.1\r\nHost: x\r\n\r\n", "the request is not valid HTTP/1.1"),
        ("garbage\r\n\r\n", "the request is not valid HTTP/1.1"),
        ("GET /health HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n", "the request is not valid HTTP/1.1"),
        ("GET /health?x=\u{e4} HTTP/1.1\r\nHost: x\r\n\r\n", "the request is not valid HTTP/1.1"),
        ("GET /health HTTP/1.1\r\nConnection: close\r\n\r\n", "an HTTP/1.1 request needs a Host header"),
        ("GET /health HTTP/1.1\r\nHost: a\r\nhost: b\r\n\r\n", "a request has one Host header, not several"),
        ("GET /health HTTP/1.1\r\nHost: a\r\nHOST: a\r\n\r\n", "a request has one Host header, not several"),
        ("GET /health HTTP/1.0\r\nHost: a\r\nHost: b\r\n\r\n", "a request has one Host header, not several"),
        ("GET /health HTTP/1.1\r\nHost: a b\r\n\r\n", "Host must be host[:port]"),
        ("GET /health HTTP/1.1\r\nHost: evil.example/x\r\n\r\n", "Host must be host[:port]"),
        ("GET /health HTTP/1.1\r\nHost: user@evil.example\r\n\r\n", "Host must be host[:port]"),
        ("POST /v1/items HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}", "an HTTP/1.1 request needs a Host header"),
    ])
    func aRequestThatIsNotHTTPGetsA400AndTheConnectionCloses(request: String, message: String) async throws {
        try await withTestApp { app in
            try await app.live { client in
                let port = try #require(client.port)
                let response = try await blocking { try RawSocket(port: port, raw: request).failingStalledReads().readAll() }
                #expect(response.hasPrefix("HTTP/1.1 400 Bad Request\r\n"), "\(response.prefix(200))")
                #expect(response.contains(#""code":"invalidRequest""#) && response.contains(message), "\(response.prefix(400))")
                #expect(response.components(separatedBy: "HTTP/1.1 400 ").count == 2 && !response.contains("200 OK"), "one answer, then the connection closed: \(response)")
            }
        }
    }

    /// Hosts as clients send them, and an HTTP/1.0 request without one, are served.
    @Test(arguments: [
        "GET /health HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nConnection: close\r\n\r\n",
        "GET /health HTTP/1.1\r\nhost: [::1]:8080\r\nConnection: close\r\n\r\n",
        "GET /health HTTP/1.1\r\nHOST: stock-room.example.com\r\nConnection: close\r\n\r\n",
        "GET /health HTTP/1.1\r\nHost: \r\nConnection: close\r\n\r\n",
        "GET /health HTTP/1.0\r\n\r\n",
    ])
    func aWellFormedHostIsServed(request: String) async throws {
        try await withTestApp { app in
            try await app.live { client in
                let response = try await blocking { try RawSocket(port: try #require(client.port), raw: request).failingStalledReads().readAll() }
                #expect(response.hasPrefix("HTTP/1.1 200 OK\r\n") || response.hasPrefix("HTTP/1.0 200 OK\r\n"), "\(response.prefix(200))")
            }
        }
    }

    /// A later request on a keep-alive connection that does not parse gets the contract's answer
    /// too, not a bare 400, once the answer before it is complete.
    @Test(.timeLimit(.minutes(10)), arguments: ["garbage\r\n\r\n", "GET /health?x=a b HTTP/1.1\r\nHost: x\r\n\r\n"])
    func aLaterRequestThatIsNotHTTPGetsTheContracts400(request: String) async throws {
        try await withTestApp { app in
            try await app.live { client in
                let port = try #require(client.port)
                let response = try await blocking {
                    let socket = try RawSocket(port: port, raw: "GET /health HTTP/1.1\r\nHost: x\r\n\r\n").failingStalledReads()
                    _ = try socket.readHead()
                    _ = try socket.read(count: #"{"status":"ok"}"#.utf8.count)
                    try socket.write(request)
                    return try socket.readAll()
                }
                #expect(response.hasPrefix("HTTP/1.1 400 Bad Request\r\n"), "\(response.prefix(200))")
                #expect(response.contains(#""code":"invalidRequest""#), "\(response.prefix(300))")
            }
        }
    }

    /// A malformed request pipelined behind one still being answered never jumps the queue: the
    /// answers come in order (the 400, Hummingbird's then, after the first answer).
    @Test(.timeLimit(.minutes(10)))
    func aMalformedRequestPipelinedBehindAnotherIsAnsweredAfterIt() async throws {
        try await withTestApp { app in
            try await app.live { client in
                let port = try #require(client.port)
                let response = try await blocking {
                    let socket = try RawSocket(port: port, raw: "GET /health HTTP/1.1\r\nHost: x\r\n\r\ngarbage\r\n\r\n").failingStalledReads()
                    return try socket.readAll()
                }
                #expect(response.hasPrefix("HTTP/1.1 200 OK\r\n"), "\(response.prefix(200))")
                let rest = try #require(response.range(of: #"{"status":"ok"}"#)).upperBound
                #expect(response[rest...].hasPrefix("HTTP/1.1 400 Bad Request\r\n"), "\(response.prefix(400))")
            }
        }
    }

    /// A head that parses followed by a body that does not (a chunk size that is not hex, or beyond
    /// 64 bits) is the client's error: 400 invalidRequest, never a 500.
    @Test(.timeLimit(.minutes(10)), arguments: ["zz", "fffffffffffffffffffff"])
    func aChunkedBodyThatDoesNotParseIs400(chunkSize: String) async throws {
        try await withTestApp { app in
            try await app.live { client in
                let socket = try RawSocket(
                    port: try #require(client.port),
                    raw: "POST /v1/items HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(app.editor)\r\n"
                        + "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n\(chunkSize)\r\nabc\r\n0\r\n\r\n")
                let response = try await ReliabilityTests.response(socket)
                #expect(response.hasPrefix("HTTP/1.1 400 Bad Request\r\n"), "\(response.prefix(120))")
                #expect(response.contains(#""code":"invalidRequest""#))
            }
        }
    }

    /// A body the client cut off (it went away, or was closed for stalling) surfaces as the HTTP
    /// parser's `invalidEOFState`; it is logged and counted as the client's 400, not as a 500.
    @Test func aBodyCutOffIsTheClientsError() {
        for error: HTTPParserError in [.invalidEOFState, .invalidChunkSize, .invalidContentLength] {
            let mapped = APIError(error)
            #expect(mapped.status == .badRequest && mapped.code == .invalidRequest, "\(error)")
        }
    }

    /// A client whose connection resets while the server reads its body (a phone that lost its
    /// network) is the client's 400, counted so: it was an `unhandled error` logged and counted 500.
    @Test func aConnectionResetMidBodyIsTheClientsError() async throws {
        #expect(APIError(IOError(errnoCode: ECONNRESET, reason: "read(descriptor:pointer:size:)")).code == .invalidRequest)
        try await withTestApp { app in
            try await app.live { client in
                let server = LiveServer(port: try #require(client.port))
                let series = #"{http_route="/v1/items",http_request_method="POST",http_response_status_code="#
                let (before400, before500) = (
                    try await MetricsGaugeTests.gauge(server, "hb_requests\(series)\"400\"}"),
                    try await MetricsGaugeTests.gauge(server, "hb_requests\(series)\"500\"}")
                )
                for _ in 0..<3 {
                    let head = "POST /v1/items HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(app.editor)\r\n"
                        + "Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"name\": \"half"
                    let socket = try RawSocket(port: server.port, path: "", raw: head)
                    try await Task.sleep(for: .milliseconds(200))
                    socket.resetOnClose()
                    withExtendedLifetime(socket) {}
                }
                try await eventually("the three resets are counted", interval: .milliseconds(100)) {
                    try await MetricsGaugeTests.gauge(server, "hb_requests\(series)\"400\"}") >= before400 + 3
                }
                #expect(try await MetricsGaugeTests.gauge(server, "hb_requests\(series)\"500\"}") == before500)
                #expect(try await app.database.listItems(after: nil, limit: 10, query: nil, status: nil).items.isEmpty, "nothing applied")
            }
        }
    }

    /// A head over the HTTP decoder's limits (a URL or a header of megabytes, or more than 1,000
    /// headers) is 431 with the contract's body. The client is still sending when the server has
    /// read enough to refuse it: it gets the answer, not a reset, as the server reads on until the
    /// client is done.
    @Test(.timeLimit(.minutes(10)), arguments: ["a URL of 8 MiB", "a header of 8 MiB", "1,001 headers"])
    func aHeadOverTheLimitsIs431EvenToAClientStillSendingIt(sent head: String) async throws {
        let big = String(repeating: "a", count: 8 << 20)
        let request =
            switch head {
            case "a URL of 8 MiB": "GET /health?x=\(big) HTTP/1.1\r\nHost: x\r\n\r\n"
            case "a header of 8 MiB": "GET /health HTTP/1.1\r\nHost: x\r\nX-Big: \(big)\r\n\r\n"
            default: "GET /health HTTP/1.1\r\nHost: x\r\n\((0...1000).map { "X-\($0): a\r\n" }.joined())\r\n"
            }
        try await withTestApp { app in
            try await app.live { client in
                let port = try #require(client.port)
                let (sent, response) = try await blocking {
                    let socket = try RawSocket(port: port, raw: "")
                    let sent = request.utf8CString.withUnsafeBufferPointer { bytes in
                        var offset = 0
                        let count = bytes.count - 1
                        while offset < count {
                            let written = send(socket.descriptor, bytes.baseAddress! + offset, count - offset, Int32(MSG_NOSIGNAL))
                            if written <= 0 { break }
                            offset += written
                        }
                        return offset == count
                    }
                    return (sent, try socket.readAll())
                }
                #expect(sent, "the whole head was sent, not cut off by a reset")
                #expect(response.hasPrefix("HTTP/1.1 431 Request Header Fields Too Large\r\n"), "\(response.prefix(200))")
                #expect(response.contains(#""code":"requestHeaderFieldsTooLarge""#) && response.contains("at most 80 KiB"), "\(response.prefix(400))")
                #expect(response.contains("Connection: close\r\n"))
            }
        }
    }

    /// A Content-Length over the 1 MiB limit is answered 413 at once, before any of the body comes,
    /// instead of waiting for a body that may never come (and then only closing the connection).
    @Test(.timeLimit(.minutes(10)))
    func aDeclaredLengthOverTheLimitIs413AtOnce() async throws {
        try await withTestApp { app in
            let settings: [AbsoluteConfigKey: ConfigValue] = ["http.idleTimeoutSeconds": .init(.int(5), isSecret: false)]
            try await app.live(settings: settings) { client in
                let socket = try RawSocket(
                    port: try #require(client.port),
                    raw: "POST /v1/items HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(app.editor)\r\n"
                        + "Content-Type: application/json\r\nContent-Length: \(100 << 30)\r\n\r\n")
                let response = try await ReliabilityTests.response(socket)
                #expect(response.hasPrefix("HTTP/1.1 413 "), "\(response.prefix(120))")
                #expect(response.contains(#""code":"payloadTooLarge""#))
            }
        }
    }
}

extension RawSocket {
    /// Connects and sends `raw` as is.
    convenience init(port: Int, raw: String) throws {
        try self.init(port: port, path: "", raw: raw)
    }

    /// Everything the server sends until it closes, as text.
    func readAll() throws -> String {
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = recv(descriptor, &buffer, buffer.count, 0)
            if count <= 0 { break }
            data.append(contentsOf: buffer[0..<count])
        }
        return String(decoding: data, as: UTF8.self)
    }
}
