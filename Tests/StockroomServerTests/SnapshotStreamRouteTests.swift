import Configuration
import Dispatch
import Foundation
import GRDB
import StockroomCore
import StockroomWire
import StockroomStorage
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// `GET /v1/snapshot` streams from one read transaction (issue #13), over real loopback HTTP.
@Suite("Streamed snapshot over HTTP")
struct SnapshotStreamRouteTests {
    /// Given about 8 MB of items, far more than the socket buffers between the server and a client
    /// whose receive buffer is 4 KiB, when that client reads the head of a snapshot and stops, then
    /// writes go on committing while the snapshot's read transaction is still open, and the snapshot,
    /// read slowly to its end, holds every item as it was when it began and none of those writes,
    /// with a cursor from which the feed replays exactly those writes.
    @Test func aSlowReaderHoldsNoWriterAndGetsOneConsistentRead() async throws {
        try await withTestApp { app in
            let items = try await Self.seedLargeInventory(app)
            #expect(items.count == 20_000)
            try await app.live { client in
                let server = LiveServer(port: try #require(client.port))
                let head = try await server.drain(since: "now", token: app.editor).cursor

                let socket = try LoopbackSocket(port: server.port, receiveBuffer: 4096)
                try await socket.send(
                    "GET /v1/snapshot HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer \(app.editor)\r\nConnection: close\r\n\r\n")
                var received = try await socket.read(upTo: 4096)
                #expect(!received.isEmpty)

                // The client reads nothing more; writes come in and are answered.
                var written: [String] = []
                for index in 0..<10 {
                    let created = try await server.request(.POST, "/v1/items", token: app.editor, json: draftJSON(name: "During \(index)"))
                    #expect(created.status == 201)
                    written.append(try JSONCoding.decoder().decode(Item.self, from: created.body).id.description)
                }
                for item in items.prefix(5) {
                    #expect(try await server.request(.PUT, "/v1/items/\(item.id)", token: app.editor, json: draftJSON(name: "Renamed")).status == 200)
                    written.append(item.id.description)
                }
                for item in items.suffix(5) {
                    #expect(try await server.request(.DELETE, "/v1/items/\(item.id)", token: app.editor).status == 204)
                    written.append(item.id.description)
                }
                // The snapshot's read transaction is still open: the WAL cannot be checkpointed past it.
                let checkpoint = try DatabaseQueue(path: app.databasePath)
                let framesLeft = try await checkpoint.writeWithoutTransaction { db in
                    let row = try #require(try Row.fetchOne(db, sql: "PRAGMA wal_checkpoint(PASSIVE)"))
                    return (row[1] as Int) - (row[2] as Int)
                }
                #expect(framesLeft > 0)
                try checkpoint.close()

                // Read the rest, a small buffer at a time.
                while true {
                    let chunk = try await socket.read(upTo: 16 * 1024)
                    if chunk.isEmpty { break }
                    received += chunk
                }
                let response = try HTTPResponseBytes(received)
                #expect(response.status == 200)
                #expect(response.headers["transfer-encoding"] == "chunked")
                struct Body: Decodable {
                    let items: [Item]
                    let navigation: [Navigation]
                    let cursor: String
                }
                let body = try JSONCoding.decoder().decode(Body.self, from: Data(response.body))
                #expect(body.items == items)
                #expect(body.cursor == head)
                let replay = try await server.drain(since: body.cursor, token: app.editor)
                #expect(replay.changes.map(\.id) == written)
                #expect(replay.changes.map(\.op) == Array(repeating: "upsert", count: 15) + Array(repeating: "delete", count: 5))
            }
        }
    }
}

extension SnapshotStreamRouteTests {
    /// 20,000 items with long names: about 8 MB of snapshot, far more than the socket buffers
    /// between the server and a client whose receive buffer is 4 KiB.
    static func seedLargeInventory(_ app: TestApp) async throws -> [Item] {
        let name = String(repeating: "n", count: 190)
        var seeded: [Item] = []
        for batch in 0..<20 {
            let items = (0..<1000).map { index in
                BatchItem(id: nil, draft: Draft(name: "\(batch)-\(index) \(name)", color: nil, status: .inStock(quantity: index)))
            }
            guard case .fresh(let outcomes) = try await app.database.createItems(items, origin: Origin(user: "erin")) else { continue }
            for case .created(let item) in outcomes { seeded.append(item) }
        }
        return seeded
    }

    /// A snapshot whose client reads its head and then nothing: it holds its read until the write timeout.
    static func stalledSnapshot(_ server: LiveServer, token: String) async throws -> (socket: LoopbackSocket, head: String) {
        let socket = try LoopbackSocket(port: server.port, receiveBuffer: 4096)
        try await socket.send("GET /v1/snapshot HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer \(token)\r\n\r\n")
        let head = String(decoding: try await socket.read(upTo: 4096), as: UTF8.self)
        return (socket, head.components(separatedBy: "\r\n").first ?? "")
    }

    /// Given about 8 MB of items and caps of 2 snapshots per token and 3 in all, when clients that
    /// stop reading hold two of one token's snapshots, then that token's next snapshot and export
    /// are `503` with `Retry-After` while another token's snapshot is served; past 3 in all every
    /// token's is `503`; and once a stalled client goes, its token's place is free again.
    @Test(.timeLimit(.minutes(10)))
    func stalledDownloadsHoldOnlyTheirTokensShare() async throws {
        try await withTestApp { app in
            _ = try await Self.seedLargeInventory(app)
            let settings: [AbsoluteConfigKey: ConfigValue] = [
                "feed.maxSnapshotsPerToken": .init(.int(2), isSecret: false),
                "feed.maxSnapshots": .init(.int(3), isSecret: false),
            ]
            try await app.live(settings: settings) { client in
                let server = LiveServer(port: try #require(client.port))
                let first = try await Self.stalledSnapshot(server, token: app.editor)
                let second = try await Self.stalledSnapshot(server, token: app.editor)
                #expect(first.head == "HTTP/1.1 200 OK" && second.head == "HTTP/1.1 200 OK")

                let third = try await server.requestWithHeaders(.GET, "/v1/snapshot", token: app.editor)
                #expect(third.status == 503)
                #expect(third.headers["retry-after"] == "5")
                let error = try JSONSerialization.jsonObject(with: third.body) as? [String: [String: Any]]
                #expect(error?["error"]?["code"] as? String == "unavailable")
                #expect(try await server.request(.GET, "/v1/items/export", token: app.editor).status == 503)

                let viewer = try await Self.stalledSnapshot(server, token: app.viewer)
                #expect(viewer.head == "HTTP/1.1 200 OK", "another token has its own share")
                #expect(try await server.request(.GET, "/v1/snapshot", token: app.otherEditor).status == 503, "the total cap")

                let metrics = String(decoding: try await server.request(.GET, "/metrics", token: nil).body, as: UTF8.self)
                #expect(metrics.contains(#"stockroom_limit_refusals_total{limit="snapshotsPerToken"} 2"#))
                #expect(metrics.contains(#"stockroom_limit_refusals_total{limit="snapshots"} 1"#))

                first.socket.hangUp()
                try await eventually("the editor's place is free once its stalled client has gone", interval: .milliseconds(50)) {
                    try await server.request(.GET, "/v1/items/export?filter=quantity%20%3D%203", token: app.editor).status == 200
                }
                _ = (second, viewer)
            }
        }
    }
}

/// A blocking loopback TCP client with a fixed, small receive buffer (so the kernel buffers little
/// for it), run on a serial queue of its own rather than on the test's executor.
final class LoopbackSocket: @unchecked Sendable {
    // Safe: `descriptor` is set once, and every call on it runs on `queue`, one at a time.
    private let descriptor: Int32
    private let queue = DispatchQueue(label: "loopback-socket")

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    init(port: Int, receiveBuffer: Int32) throws {
        #if canImport(Glibc)
            descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #else
            descriptor = socket(AF_INET, SOCK_STREAM, 0)
        #endif
        guard descriptor >= 0 else { throw Failure(description: "socket: \(errno)") }
        var size = receiveBuffer
        // Before connect, so the window the server sees is small from the start (and not autotuned).
        guard setsockopt(descriptor, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size)) == 0 else {
            throw Failure(description: "setsockopt: \(errno)")
        }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { throw Failure(description: "connect: \(errno)") }
    }

    deinit {
        close(descriptor)
    }

    /// Ends the connection both ways now (unread bytes and all), as a client that goes away does.
    func hangUp() {
        queue.sync { _ = shutdown(descriptor, Int32(SHUT_RDWR)) }
    }

    func send(_ text: String) async throws {
        let bytes = Array(text.utf8)
        try await run {
            var sent = 0
            while sent < bytes.count {
                let count = bytes[sent...].withUnsafeBytes { systemSend(self.descriptor, $0.baseAddress, $0.count, 0) }
                guard count > 0 else { throw Failure(description: "send: \(errno)") }
                sent += count
            }
        }
    }

    /// Up to `count` bytes, waiting for at least one; empty at the end of the stream.
    func read(upTo count: Int) async throws -> [UInt8] {
        try await run {
            var buffer = [UInt8](repeating: 0, count: count)
            let read = buffer.withUnsafeMutableBytes { recv(self.descriptor, $0.baseAddress, count, 0) }
            guard read >= 0 else { throw Failure(description: "recv: \(errno)") }
            return Array(buffer.prefix(read))
        }
    }

    private func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            queue.async { continuation.resume(with: Result { try body() }) }
        }
    }
}

/// The C library's `send`, which `LoopbackSocket.send` hides.
private func systemSend(_ descriptor: Int32, _ bytes: UnsafeRawPointer?, _ count: Int, _ flags: Int32) -> Int {
    send(descriptor, bytes, count, flags)
}

/// An HTTP/1.1 response read whole from a socket: status, headers (lowercased names), body with any
/// chunked transfer encoding undone.
struct HTTPResponseBytes {
    let status: Int
    let headers: [String: String]
    let body: [UInt8]

    init(_ bytes: [UInt8]) throws {
        let separator = Array("\r\n\r\n".utf8)
        guard let end = (0...(bytes.count - separator.count)).first(where: { Array(bytes[$0..<$0 + 4]) == separator }) else {
            throw LoopbackSocket.Failure(description: "no end of headers")
        }
        let lines = String(decoding: bytes[..<end], as: UTF8.self).components(separatedBy: "\r\n")
        status = Int(lines[0].split(separator: " ")[1]) ?? 0
        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        self.headers = headers
        var offset = end + 4
        guard headers["transfer-encoding"] == "chunked" else {
            body = Array(bytes[offset...])
            return
        }
        var body: [UInt8] = []
        while true {
            guard let lineEnd = (offset..<max(offset, bytes.count - 1)).first(where: { bytes[$0] == 13 && bytes[$0 + 1] == 10 }),
                let size = Int(String(decoding: bytes[offset..<lineEnd], as: UTF8.self).split(separator: ";")[0], radix: 16)
            else { throw LoopbackSocket.Failure(description: "malformed chunk") }
            if size == 0 { break }
            let start = lineEnd + 2
            guard bytes.count >= start + size + 2 else { throw LoopbackSocket.Failure(description: "truncated chunk") }
            body += bytes[start..<start + size]
            offset = start + size + 2
        }
        self.body = body
    }
}
