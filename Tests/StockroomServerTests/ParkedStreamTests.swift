import Foundation
import NIOCore
import StockroomCore
import StockroomStorage
import StockroomWire
import Testing

@testable import StockroomServer

/// An SSE stream holds no task once it has caught up (`ParkedSSEStream`): its connection is kept
/// by the pipeline and each commit, heartbeat or close runs one short round. What a client sees.
@Suite("Parked SSE streams")
struct ParkedStreamTests {
    /// A stream that ends (here its token is revoked) writes its last event, ends its chunked body
    /// and closes its connection, as its head announces: a client can tell the end from a cut.
    @Test(.timeLimit(.minutes(10)))
    func aStreamThatEndsFinishesItsBodyAndClosesItsConnection() async throws {
        try await withTestApp { app in
            try await app.live { client in
                let server = LiveServer(port: try #require(client.port))
                let token = try await app.database.createToken(user: "vic", role: .viewer)
                let socket = OneAtATime(try RawSocket(port: server.port, path: "/v1/changes/stream?since=now&access_token=\(token.secret)")
                    .failingStalledReads())
                let head = try await blocking { try socket.readHead() }
                #expect(head.hasPrefix("HTTP/1.1 200"))
                #expect(head.lowercased().contains("connection: close\r\n"), "\(head)")
                _ = try await blocking { try socket.readUntil(": open\n\n") }

                _ = try await server.request(.DELETE, "/v1/tokens/\(token.info.id)", token: app.admin)
                let rest = try await blocking { try socket.readToClose() }

                #expect(rest.contains("event: error\ndata: "), "\(rest)")
                #expect(rest.contains(#""code":"unauthorized""#), "\(rest)")
                #expect(rest.hasSuffix("\r\n0\r\n\r\n"), "the last chunk, then the close: \(rest.suffix(40).debugDescription)")
            }
        }
    }

    /// Bytes a client sends after its stream's request (a pipelined request, garbage) are read and
    /// dropped: nothing answers them, and the stream goes on delivering.
    @Test(.timeLimit(.minutes(10)))
    func whatAClientSendsAfterItsStreamRequestIsDroppedAndTheStreamGoesOn() async throws {
        try await withTestApp { app in
            try await app.live { client in
                let server = LiveServer(port: try #require(client.port))
                let request = "GET /v1/changes/stream?since=now&access_token=\(app.viewer) HTTP/1.1\r\nHost: x\r\n\r\n"
                let socket = OneAtATime(try RawSocket(port: server.port, path: "", raw: request + "GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
                    .failingStalledReads())
                #expect(try await blocking { try socket.readHead() }.hasPrefix("HTTP/1.1 200"))
                _ = try await blocking { try socket.readUntil(": open\n\n") }
                try socket.write("this is not HTTP\r\n\r\n")

                let created = try await server.request(.POST, "/v1/items", token: app.editor, json: #"{"name": "Lamp", "status": {"inStock": {"quantity": 1}}}"#)
                #expect(created.status == 201)
                let id = try JSONCoding.decoder().decode(Item.self, from: created.body).id.description

                let text = try await blocking { try socket.readUntil(id) }
                #expect(text.contains("event: change"))
                #expect(!text.contains("HTTP/1.1"), "no answer to what came after the stream's request: \(text)")
            }
        }
    }

    /// Many parked streams and concurrent writers: every stream gets every change once, in commit
    /// order (each round reads past its own cursor, and rounds of one stream never overlap).
    @Test(.timeLimit(.minutes(10)))
    func everyParkedStreamGetsEveryConcurrentCommitInOrder() async throws {
        try await withTestApp { app in
            try await app.live { client in
                let server = LiveServer(port: try #require(client.port))
                let streams = 150  // more than a slice of `LoopDeliveries` on each of the two loops
                let writes = 40
                let sockets = try (0..<streams).map { _ in
                    OneAtATime(try RawSocket(port: server.port, path: "/v1/changes/stream?since=now&topics=items&access_token=\(app.viewer)")
                        .failingStalledReads())
                }
                for socket in sockets { _ = try await blocking { try socket.readUntil(": open\n\n") } }

                try await withThrowingTaskGroup(of: Void.self) { group in
                    for n in 0..<writes {
                        group.addTask {
                            let body = #"{"name": "Item \#(n)", "status": {"inStock": {"quantity": \#(n)}}}"#
                            let created = try await server.request(.POST, "/v1/items", token: app.editor, json: body)
                            #expect(created.status == 201)
                        }
                    }
                    try await group.waitForAll()
                }
                let expected = try await server.drain(since: nil, token: app.viewer, topics: "items").changes.map(\.seq)
                #expect(expected.count == writes)

                let seen = try await withThrowingTaskGroup(of: [Int].self) { group in
                    for socket in sockets {
                        group.addTask {
                            try await blocking {
                                var seqs: [Int] = []
                                var text = ""
                                while seqs.count < writes {
                                    text += try socket.readUntil("\n\n")
                                    seqs = text.split(separator: "\n").filter { $0.hasPrefix("data: ") }
                                        .compactMap { try? FeedChange.decode(String($0.dropFirst(6))).seq }
                                }
                                return seqs
                            }
                        }
                    }
                    return try await group.reduce(into: []) { $0.append($1) }
                }
                #expect(seen.count == streams)
                for seqs in seen { #expect(seqs == expected) }
            }
        }
    }
}

/// A raw socket handed from one blocking call to the next.
// @unchecked: each test awaits one call on a socket before it makes the next, so no two threads use it at once.
final class OneAtATime: @unchecked Sendable {
    let socket: RawSocket

    init(_ socket: RawSocket) { self.socket = socket }

    func readHead() throws -> String { try socket.readHead() }
    func readUntil(_ marker: String) throws -> String { try socket.readUntil(marker) }
    /// Everything until the server closes; a read that times out throws instead.
    func readToClose() throws -> String { try socket.readToClose() }
    func write(_ text: String) throws { try socket.write(text) }
}

/// A parked stream writes each change as a whole HTTP/1.1 chunk, shared by every stream; a stream
/// in a task writes the frame inside it.
@Suite("SSE frames as chunks")
struct SSEChunkTests {
    @Test(arguments: [0, 1, 15, 16, 255, 4096, 70_000])
    func aChunkIsItsSizeInHexCRLFTheBytesCRLFAndItsFrameIsTheBytes(size: Int) {
        let body = ByteBuffer(string: String(repeating: "x", count: max(size, 1)))
        let chunk = SSEFrames.chunk(of: body)
        let hex = String(body.readableBytes, radix: 16)
        #expect(String(buffer: chunk) == hex + "\r\n" + String(buffer: body) + "\r\n")
        #expect(SSEFrames.frame(ofChunk: chunk) == body)
    }

    /// A catch-up page is one chunk holding every change's frame in order, whether a live stream
    /// shared the frame already or not; a live commit's few changes are their shared chunks.
    @Test func aLargePageIsOneChunkOfItsFramesAndASmallOneItsSharedChunks() {
        let frames = SSEFrames(epoch: "e1")
        let entries = (1...20).map { seq in
            ChangeEntry(
                seq: Int64(seq), entity: .item, op: .upsert, id: "item-\(seq)", owner: nil, valueJSON: #"{"n":\#(seq)}"#,
                originClientID: nil, originIdempotencyKey: nil, at: 1_700_000_000_000 + Int64(seq), epoch: "e1")
        }
        let expected = entries.map { String(buffer: SSEFrames.encode($0, epoch: "e1")) }
        let shared = entries[4..<9].map(frames.chunk)

        let page = frames.chunks(entries)
        #expect(page.count == 1)
        #expect(String(buffer: SSEFrames.frame(ofChunk: page[0])) == expected.joined())
        #expect(String(buffer: page[0]).hasPrefix(String(expected.joined().utf8.count, radix: 16) + "\r\n"))

        let small = frames.chunks(Array(entries[4..<(4 + SSEFrames.sharedChunksUpTo)]))
        #expect(small.count == SSEFrames.sharedChunksUpTo)
        #expect(Array(small.prefix(5)) == shared)
        #expect(small.map { String(buffer: SSEFrames.frame(ofChunk: $0)) } == Array(expected[4..<(4 + SSEFrames.sharedChunksUpTo)]))
    }
}

extension RawSocket {
    /// Reads until what has come (decoded, chunk framing and all) contains `marker`; returns it.
    func readUntil(_ marker: String) throws -> String {
        var bytes: [UInt8] = []
        let needle = Array(marker.utf8)
        while !bytes.hasSuffix(needle) { bytes += try read(count: 1) }
        return String(decoding: bytes, as: UTF8.self)
    }
}

extension Array where Element == UInt8 {
    fileprivate func hasSuffix(_ needle: [UInt8]) -> Bool {
        guard count >= needle.count else { return false }
        return self[(count - needle.count)...].elementsEqual(needle)
    }
}
