import Configuration
import Foundation
import Testing

@testable import StockroomServer

@Suite("Browser access: WebSocket refusals as close codes, against a live server")
struct WebSocketCloseCodeTests {
    /// Sends a WebSocket handshake for `query` and reads the response head and the first frame.
    /// Raw, not HummingbirdWSClient: that client sometimes misses a close frame that arrives in the
    /// same read as the `101`, and then waits forever.
    static func handshake(port: Int, query: String, host: String = "x", origin: String? = nil) async throws
        -> (head: String, opcode: UInt8, payload: [UInt8])
    {
        let originLine = origin.map { "Origin: \($0)\r\n" } ?? ""
        return try await blocking {
            let socket = try RawSocket(port: port, raw: "GET /v1/changes/ws?\(query) HTTP/1.1\r\nHost: \(host)\r\n\(originLine)\(Self.handshake)\r\n")
                .failingStalledReads()
            let head = try socket.readHead()
            let frame = try socket.readFrame()
            return (head, frame.opcode, frame.payload)
        }
    }

    /// The `error` object of a close reason.
    static func error(_ reason: String?) throws -> [String: String] {
        let object = try JSONSerialization.jsonObject(with: Data(try #require(reason).utf8)) as? [String: [String: Any]]
        let error = try #require(object?["error"])
        return error.compactMapValues { $0 as? String }
    }

    @Test(arguments: [
        ("", 4401, "unauthorized", nil),
        ("access_token=sr_not-a-token", 4401, "unauthorized", nil),
        ("since=garbage&access_token=VIEWER", 4400, "invalidParameter", "since"),
        ("topics=items,pets&access_token=VIEWER", 4400, "invalidParameter", "topics"),
        ("since=c1.abcdef.0&access_token=VIEWER", 4410, "resyncRequired", nil),
        ("filter=quantity%20%3C&access_token=VIEWER", 4422, "validationFailed", "filter"),
        ("since=c1.abcdef.0&clientID=no%20spaces&access_token=VIEWER", 4400, "invalidParameter", "clientID"),
    ] as [(String, Int, String, String?)])
    func aRefusedUpgradeIsUpgradedThenClosedWith4000PlusStatusAndTheErrorBody(
        query: String, closeCode: Int, code: String, field: String?
    ) async throws {
        try await withTestApp { app in
            try await app.live { client in
                let port = try #require(client.port)
                let query = query.replacingOccurrences(of: "VIEWER", with: app.viewer)
                let answer = try await Self.handshake(port: port, query: query)
                #expect(answer.head.hasPrefix("HTTP/1.1 101 Switching Protocols\r\n"))
                #expect(answer.opcode == 0x8, "the first frame closes")
                #expect(Int(answer.payload[0]) << 8 | Int(answer.payload[1]) == closeCode)
                let reason = String(decoding: answer.payload.dropFirst(2), as: UTF8.self)
                let error = try Self.error(reason)
                #expect(error["code"] == code)
                #expect(error["field"] == field)
                #expect(reason.utf8.count <= 123)
                // Counted with the answers, under the status the close code carries.
                let metrics = String(decoding: try await LiveServer(port: port).request(.GET, "/metrics", token: nil).body, as: UTF8.self)
                #expect(metrics.contains(
                    #"hb_requests{http_route="/v1/changes/ws",http_request_method="GET",http_response_status_code="\#(closeCode - 4000)"}"#))
                // The same request without upgrade headers: a bad token is still 401; past it, the
                // request's own shape comes first, whatever its parameters say.
                let plain = try await LiveServer(port: port).request(.GET, "/v1/changes/ws?\(query)", token: nil)
                #expect(plain.status == (closeCode == 4401 ? 401 : 426))
                #expect(try Self.error(String(decoding: plain.body, as: UTF8.self))["code"] == (closeCode == 4401 ? code : "upgradeRequired"))
            }
        }
    }

    @Test func aPageFromAnOriginThatIsNeitherThisServerNorAllowedIsClosedWith4403() async throws {
        try await withTestApp { app in
            let settings: [AbsoluteConfigKey: ConfigValue] = ["http.corsAllowedOrigins": .init(.stringArray(["http://app.test"]), isSecret: false)]
            try await app.live(settings: settings) { client in
                let port = try #require(client.port)
                _ = try await client.send(.post, "/v1/items", token: app.editor, json: draftJSON(name: "Lamp"))
                let query = "access_token=\(app.viewer)"
                // Another site's page, and a page whose origin is opaque (a sandboxed frame any site
                // can embed, a data: or file: page: the browser sends `null`, or some `file://`).
                for origin in ["http://elsewhere.test", "null", "file://", "FILE://"] {
                    let foreign = try await Self.handshake(port: port, query: query, origin: origin)
                    #expect(foreign.opcode == 0x8, "\(origin)")
                    #expect(Int(foreign.payload[0]) << 8 | Int(foreign.payload[1]) == 4403, "\(origin)")
                    #expect(try Self.error(String(decoding: foreign.payload.dropFirst(2), as: UTF8.self))["code"] == "forbidden")
                }
                // This server's own pages, allowed origins, and clients that send no web origin get the feed.
                let others: [(String, String?)] = [
                    ("127.0.0.1:\(port)", "http://127.0.0.1:\(port)"), ("x", "http://app.test"), ("x", nil), ("x", "ws://127.0.0.1"),
                ]
                for (host, origin) in others {
                    let answer = try await Self.handshake(port: port, query: query, host: host, origin: origin)
                    #expect(answer.opcode == 0x1, "origin \(origin ?? "none") gets the first change")
                }
            }
        }
    }

    @Test func theCloseReasonIsTheErrorBodyShortenedToFitACloseFrame() throws {
        let long = APIError(.unavailable, String(repeating: "the disk is full ", count: 20), field: "db")
        #expect(WebSocketUpgrade.closeCode(for: long) == .unknown(4503))
        let reason = WebSocketUpgrade.closeReason(for: long)
        #expect(reason.utf8.count <= 123)
        let error = try Self.error(reason)
        #expect(error["code"] == "unavailable" && error["field"] == "db")
        #expect(try #require(error["message"]).hasPrefix("the disk is full the disk"))
        let short = APIError.forbidden("viewers may not")
        #expect(WebSocketUpgrade.closeCode(for: short) == .unknown(4403))
        #expect(WebSocketUpgrade.closeReason(for: short) == #"{"error":{"code":"forbidden","message":"viewers may not","field":null}}"#)
    }

    static let handshake = "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"

    @Test func anUpgradeOnAKeptAliveConnectionSwitchesItAndStreamsTheFeed() async throws {
        try await withTestApp { app in
            try await app.live { client in
                let port = try #require(client.port)
                _ = try await client.send(.post, "/v1/items", token: app.editor, json: draftJSON(name: "Lamp"))
                let viewer = app.viewer
                let (health, head, frame) = try await blocking {
                    let socket = try RawSocket(port: port, raw: "GET /health HTTP/1.1\r\nHost: x\r\n\r\n").failingStalledReads()
                    let health = try socket.readHead()
                    _ = try socket.read(count: #"{"status":"ok"}"#.utf8.count)
                    try socket.write("GET /v1/changes/ws?access_token=\(viewer) HTTP/1.1\r\nHost: x\r\n\(Self.handshake)\r\n")
                    return (health, try socket.readHead().lowercased(), try socket.readFrame())
                }
                #expect(health.hasPrefix("HTTP/1.1 200 OK\r\n"))
                #expect(head.hasPrefix("http/1.1 101 switching protocols\r\n"))
                // RFC 6455's own example key and accept value.
                #expect(head.contains("sec-websocket-accept: s3pplmbitxaq9kygzzhzrbk+xoo=\r\n"))
                #expect(frame.opcode == 0x1)
                let change = try FeedChange.decode(String(decoding: frame.payload, as: UTF8.self))
                #expect(change.entity == "item" && change.item?.name == "Lamp")
            }
        }
    }

    @Test func aRefusalOnAKeptAliveConnectionIsACloseFrameToo() async throws {
        try await withTestApp { app in
            try await app.live { client in
                let port = try #require(client.port)
                let (head, frame) = try await blocking {
                    let socket = try RawSocket(port: port, raw: "GET /health HTTP/1.1\r\nHost: x\r\n\r\n").failingStalledReads()
                    _ = try socket.readHead()
                    _ = try socket.read(count: #"{"status":"ok"}"#.utf8.count)
                    try socket.write("GET /v1/changes/ws?access_token=wrong HTTP/1.1\r\nHost: x\r\n\(Self.handshake)\r\n")
                    return (try socket.readHead(), try socket.readFrame())
                }
                #expect(head.hasPrefix("HTTP/1.1 101 Switching Protocols\r\n"))
                #expect(frame.opcode == 0x8)
                #expect(Int(frame.payload[0]) << 8 | Int(frame.payload[1]) == 4401)
                #expect(try Self.error(String(decoding: frame.payload.dropFirst(2), as: UTF8.self))["code"] == "unauthorized")
            }
        }
    }

    @Test func aHandshakeThatCannotBeFinishedGetsThePlainErrorAndTheConnectionCloses() async throws {
        try await withTestApp { app in
            try await app.live { client in
                let port = try #require(client.port)
                let base = "GET /v1/changes/ws?access_token=\(app.viewer) HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                let oldVersion = try await blocking {
                    try RawSocket(port: port, raw: base + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 8\r\n\r\n")
                        .failingStalledReads().readAll().lowercased()
                }
                #expect(oldVersion.hasPrefix("http/1.1 426 upgrade required\r\n"))
                #expect(oldVersion.contains("sec-websocket-version: 13\r\n") && oldVersion.contains("connection: close\r\n"))
                #expect(oldVersion.contains(#""code":"upgraderequired""#))
                // The handshake is checked before the parameters: an old cursor does not make it 410.
                let oldCursor = try await blocking {
                    try RawSocket(
                        port: port,
                        raw: base.replacingOccurrences(of: "?access_token", with: "?since=c1.abcdef.0&access_token")
                            + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: AAA\r\n\r\n"
                    ).failingStalledReads().readAll().lowercased()
                }
                #expect(oldCursor.hasPrefix("http/1.1 426 upgrade required\r\n"))
                let noKey = try await blocking { try RawSocket(port: port, raw: base + "Sec-WebSocket-Version: 13\r\n\r\n").failingStalledReads().readAll() }
                #expect(noKey.hasPrefix("HTTP/1.1 400 Bad Request\r\n"))
                #expect(noKey.contains(#""code":"invalidParameter""#) && noKey.contains(#""field":"Sec-WebSocket-Key""#))
                // A route that is not a WebSocket answers in plain HTTP, and closes: nothing after an upgrade request is parsed.
                let health = try await blocking {
                    try RawSocket(port: port, raw: "GET /health HTTP/1.1\r\nHost: x\r\n\(Self.handshake)\r\n").failingStalledReads().readAll()
                }
                #expect(health.hasPrefix("HTTP/1.1 200 OK\r\n") && health.hasSuffix(#"{"status":"ok"}"#))
            }
        }
    }

    /// A client frame as RFC 6455 writes one: `masked` with a fixed key, the length in 7, 16 or 64 bits.
    static func clientFrame(opcode: UInt8, fin: Bool = true, reserved: UInt8 = 0, payload: [UInt8], masked: Bool = true) -> [UInt8] {
        var frame: [UInt8] = [(fin ? 0x80 : 0) | reserved << 4 | opcode]
        let maskBit: UInt8 = masked ? 0x80 : 0
        switch payload.count {
        case ..<126: frame.append(maskBit | UInt8(payload.count))
        case ..<65536: frame += [maskBit | 126, UInt8(payload.count >> 8), UInt8(payload.count & 0xff)]
        default: frame += [maskBit | 127] + (0..<8).reversed().map { UInt8((payload.count >> ($0 * 8)) & 0xff) }
        }
        guard masked else { return frame + payload }
        let key: [UInt8] = [0x37, 0xfa, 0x21, 0x3d]
        return frame + key + payload.enumerated().map { $0.element ^ key[$0.offset % 4] }
    }

    /// What breaks the protocol closes the WebSocket with the code RFC 6455 gives it, whether the
    /// message comes whole or in fragments: an unmasked client frame 1002, a reserved bit set (no
    /// extension is negotiated) 1002 on any frame, text that is not UTF-8 1007, a message over 16 KiB 1009.
    @Test(arguments: [
        ("unmasked", 1002), ("a ping with RSV1", 1002), ("a pong with RSV3", 1002), ("text with RSV2", 1002), ("not UTF-8", 1007),
        ("one frame over 16 KiB", 1009), ("fragments over 16 KiB", 1009),
    ])
    func aFrameThatBreaksTheProtocolClosesWithItsCode(kind: String, code: Int) async throws {
        let setFilter = Array(#"{"setFilter":{"filter":null}}"#.utf8)
        let frames: [[UInt8]] =
            switch kind {
            case "unmasked": [Self.clientFrame(opcode: 0x1, payload: setFilter, masked: false)]
            case "a ping with RSV1": [Self.clientFrame(opcode: 0x9, reserved: 0b100, payload: Array("hi".utf8))]
            case "a pong with RSV3": [Self.clientFrame(opcode: 0xA, reserved: 0b001, payload: [])]
            case "text with RSV2": [Self.clientFrame(opcode: 0x1, reserved: 0b010, payload: setFilter)]
            case "not UTF-8": [Self.clientFrame(opcode: 0x1, payload: Array(#"{"setFilter":{"filter":""#.utf8) + [0xff, 0xfe] + Array(#""}}"#.utf8))]
            case "one frame over 16 KiB": [Self.clientFrame(opcode: 0x1, payload: [UInt8](repeating: 0x20, count: 20_000))]
            default: [
                Self.clientFrame(opcode: 0x1, fin: false, payload: [UInt8](repeating: 0x20, count: 10_000)),
                Self.clientFrame(opcode: 0x0, payload: [UInt8](repeating: 0x20, count: 10_000)),
            ]
            }
        try await withTestApp { app in
            try await app.live { client in
                let port = try #require(client.port)
                let viewer = app.viewer
                let (head, closeCode) = try await blocking {
                    let socket = try RawSocket(port: port, raw: "GET /v1/changes/ws?since=now&access_token=\(viewer) HTTP/1.1\r\nHost: x\r\n\(Self.handshake)\r\n")
                        .failingStalledReads()
                    let head = try socket.readHead()
                    for frame in frames {
                        guard send(socket.descriptor, frame, frame.count, 0) == frame.count else { throw POSIXError(.EIO) }
                    }
                    while true {
                        let frame = try socket.readFrame()
                        if frame.opcode == 0x8 { return (head, frame.payload.count >= 2 ? Int(frame.payload[0]) << 8 | Int(frame.payload[1]) : nil) }
                    }
                }
                #expect(head.hasPrefix("HTTP/1.1 101 Switching Protocols\r\n"))
                #expect(closeCode == code, "\(kind)")
            }
        }
    }

    /// A client still sending a message far over the limit gets its 1009 close frame, not a reset:
    /// the server ends its output after the close frame and reads what still comes until the
    /// client closes. Closed with those bytes unread, the connection would be reset, and the client
    /// would get the reset, its send failing, instead of the close frame.
    @Test(.timeLimit(.minutes(10)))
    func aClientStillSendingAMessageOverTheLimitReadsItsCloseFrame() async throws {
        try await withTestApp { app in
            try await app.live { client in
                let port = try #require(client.port)
                let viewer = app.viewer
                let closeCode = try await blocking {
                    let socket = try RawSocket(port: port, raw: "GET /v1/changes/ws?since=now&access_token=\(viewer) HTTP/1.1\r\nHost: x\r\n\(Self.handshake)\r\n")
                        .failingStalledReads()
                    _ = try socket.readHead()
                    // A frame of 64 MiB, far more than the socket buffers hold, so the client is still
                    // sending when the server closes (which it does on the frame's head: its payload's
                    // bytes are never read, so they need no masking).
                    let length = 64 << 20
                    let head: [UInt8] = [0x81, 0x80 | 127] + (0..<8).reversed().map { UInt8((length >> ($0 * 8)) & 0xff) } + [1, 2, 3, 4]
                    let chunk = [UInt8](repeating: 0x20, count: 1 << 20)
                    for piece in [head] + Array(repeating: chunk, count: length / chunk.count) {
                        var sent = 0
                        while sent < piece.count {
                            let count = piece[sent...].withUnsafeBytes { send(socket.descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                            guard count > 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
                            sent += count
                        }
                    }
                    while true {
                        let frame = try socket.readFrame()
                        if frame.opcode == 0x8 { return frame.payload.count >= 2 ? Int(frame.payload[0]) << 8 | Int(frame.payload[1]) : nil }
                    }
                }
                #expect(closeCode == 1009)
            }
        }
    }

    /// Frames a client sends in the same write as its upgrade request (RFC 6455 has it wait for the
    /// `101`; some do not) are read at once, not when its next bytes come: a ping is answered and a
    /// close closes.
    @Test(.timeLimit(.minutes(10)))
    func framesThatCameWithTheUpgradeRequestAreReadAtOnce() async throws {
        try await withTestApp { app in
            try await app.live { client in
                let port = try #require(client.port)
                let viewer = app.viewer
                let (head, frames) = try await blocking {
                    let upgrade = Array("GET /v1/changes/ws?since=now&access_token=\(viewer) HTTP/1.1\r\nHost: x\r\n\(Self.handshake)\r\n".utf8)
                    let bytes = upgrade + Self.clientFrame(opcode: 0x9, payload: Array("pp".utf8)) + Self.clientFrame(opcode: 0x8, payload: [0x03, 0xe8])
                    let socket = try RawSocket(port: port, path: "", raw: "").failingStalledReads()
                    guard send(socket.descriptor, bytes, bytes.count, 0) == bytes.count else { throw POSIXError(.EIO) }
                    let head = try socket.readHead()
                    var frames: [(opcode: UInt8, payload: [UInt8])] = []
                    // Nothing more is sent: a read that waits for the client's next bytes stalls and fails after 30 s.
                    while frames.last?.opcode != 0x8 { frames.append(try socket.readFrame()) }
                    return (head, frames)
                }
                #expect(head.hasPrefix("HTTP/1.1 101 Switching Protocols\r\n"))
                #expect(frames.contains { $0.opcode == 0xA && $0.payload == Array("pp".utf8) }, "the ping is answered")
                #expect(frames.last?.payload.prefix(2) == [0x03, 0xe8], "the close is answered with 1000")
            }
        }
    }
}
