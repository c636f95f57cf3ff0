import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import StockroomCore
import StockroomWire
import Testing

/// One change as the feed writes it.
struct FeedChange: Decodable, Equatable, Sendable {
    struct Origin: Decodable, Equatable, Sendable {
        let clientID: String?
        let idempotencyKey: String?
    }

    let seq: Int
    let cursor: String
    let entity: String
    let op: String
    let id: String
    let origin: Origin
    let at: Date
    let item: Item?
    let navigation: Navigation?

    enum CodingKeys: String, CodingKey { case seq, cursor, entity, op, id, origin, at, value }

    init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        seq = try c.decode(Int.self, forKey: .seq)
        cursor = try c.decode(String.self, forKey: .cursor)
        entity = try c.decode(String.self, forKey: .entity)
        op = try c.decode(String.self, forKey: .op)
        id = try c.decode(String.self, forKey: .id)
        origin = try c.decode(Origin.self, forKey: .origin)
        at = try c.decode(Date.self, forKey: .at)
        item = entity == "item" ? try c.decodeIfPresent(Item.self, forKey: .value) : nil
        navigation = entity == "navigation" ? try c.decodeIfPresent(Navigation.self, forKey: .value) : nil
    }

    static func decode(_ text: String) throws -> FeedChange {
        try JSONCoding.decoder().decode(FeedChange.self, from: Data(text.utf8))
    }
}

/// A page of `GET /v1/changes`.
struct FeedBatch: Decodable, Sendable {
    let changes: [FeedChange]
    let cursor: String
    let hasMore: Bool
}

/// A live server on loopback, reached with a real HTTP client.
struct LiveServer: Sendable {
    let port: Int

    func request(_ method: HTTPMethod, _ path: String, token: String?, json: String? = nil, headers: [(String, String)] = [])
        async throws -> (status: Int, body: Data)
    {
        var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)\(path)")
        request.method = method
        if let token { request.headers.add(name: "Authorization", value: "Bearer \(token)") }
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        if let json {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(string: json))
        }
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(120))
        let body = try await response.body.collect(upTo: 64 << 20)
        return (Int(response.status.code), Data(buffer: body))
    }

    /// `request`, with the answer's headers (names lower-cased, the last of a repeated one).
    func requestWithHeaders(_ method: HTTPMethod, _ path: String, token: String?) async throws -> (status: Int, headers: [String: String], body: Data) {
        var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)\(path)")
        request.method = method
        if let token { request.headers.add(name: "Authorization", value: "Bearer \(token)") }
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(120))
        let body = try await response.body.collect(upTo: 64 << 20)
        let headers = Dictionary(response.headers.map { ($0.name.lowercased(), $0.value) }, uniquingKeysWith: { $1 })
        return (Int(response.status.code), headers, Data(buffer: body))
    }

    /// Reads the whole feed after `since` with batch requests.
    func drain(since: String?, token: String, topics: String? = nil) async throws -> (changes: [FeedChange], cursor: String) {
        var changes: [FeedChange] = []
        var cursor = since
        while true {
            var query = ["limit=7"]
            if let cursor { query.append("since=\(cursor)") }
            if let topics { query.append("topics=\(topics)") }
            let response = try await request(.GET, "/v1/changes?" + query.joined(separator: "&"), token: token)
            try #require(response.status == 200, "\(String(decoding: response.body, as: UTF8.self))")
            let batch = try JSONCoding.decoder().decode(FeedBatch.self, from: response.body)
            changes += batch.changes
            cursor = batch.cursor
            if !batch.hasMore { return (changes, batch.cursor) }
        }
    }
}

/// A Server-Sent Events subscription read through a real HTTP client.
final class SSEReader {
    struct Event: Equatable {
        var id: String?
        var event: String?
        var data: String
    }

    private var iterator: HTTPClientResponse.Body.AsyncIterator
    private var buffer = ""
    let status: Int
    private(set) var heartbeats = 0

    init(server: LiveServer, token: String, query: String = "", lastEventID: String? = nil) async throws {
        var request = HTTPClientRequest(url: "http://127.0.0.1:\(server.port)/v1/changes/stream?access_token=\(token)&\(query)")
        if let lastEventID { request.headers.add(name: "Last-Event-ID", value: lastEventID) }
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(300))
        status = Int(response.status.code)
        iterator = response.body.makeAsyncIterator()
    }

    /// The next blank-line-separated block of the stream; nil when it ends.
    private func nextBlock() async throws -> String? {
        while true {
            if let range = buffer.range(of: "\n\n") {
                let block = String(buffer[buffer.startIndex..<range.lowerBound])
                buffer.removeSubrange(buffer.startIndex..<range.upperBound)
                return block
            }
            guard let chunk = try await iterator.next() else { return nil }
            buffer += String(buffer: chunk)
        }
    }

    /// The next event other than `progress`, which a stream sends on any idle round whose cursor
    /// moved past entries it hid (a heartbeat's tick apart, so a slow run may see one anywhere).
    func nextPastProgress() async throws -> Event? {
        while let event = try await next() {
            if event.event != "progress" { return event }
        }
        return nil
    }

    /// The next event; comments are skipped (heartbeats counted). Nil when the stream ends.
    func next() async throws -> Event? {
        while let block = try await nextBlock() {
            if block.hasPrefix(":") {
                if block.hasPrefix(": heartbeat") { heartbeats += 1 }
                continue
            }
            var event = Event(id: nil, event: nil, data: "")
            for line in block.split(separator: "\n") {
                if line.hasPrefix("id: ") { event.id = String(line.dropFirst(4)) }
                if line.hasPrefix("event: ") { event.event = String(line.dropFirst(7)) }
                if line.hasPrefix("data: ") { event.data += String(line.dropFirst(6)) }
            }
            return event
        }
        return nil
    }

    /// The next `count` change events, decoded (past `progress` events).
    func changes(_ count: Int) async throws -> [(id: String?, change: FeedChange)] {
        var result: [(String?, FeedChange)] = []
        while result.count < count {
            guard let event = try await nextPastProgress() else { break }
            #expect(event.event == "change")
            result.append((event.id, try FeedChange.decode(event.data)))
        }
        return result
    }

    /// Reads until `count` heartbeats have arrived in all; returns the events seen meanwhile.
    func waitForHeartbeats(_ count: Int) async throws -> [Event] {
        var seen: [Event] = []
        while heartbeats < count, let block = try await nextBlock() {
            if block.hasPrefix(": heartbeat") {
                heartbeats += 1
            } else if !block.hasPrefix(":") {
                seen.append(Event(id: nil, event: nil, data: block))
            }
        }
        return seen
    }
}
