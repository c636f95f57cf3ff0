import Configuration
import Foundation
import NIOCore
import Testing

@testable import StockroomServer

/// A request's body must keep coming: it has `http.bodyTimeoutSeconds`, plus a second for every
/// `http.bodyMinBytesPerSecond` bytes it has sent. A body trickled a byte at a time, which the idle
/// timeout never trips (every byte restarts it), is answered `408 requestTimeout` and changes nothing.
@Suite("A request's body that comes too slowly, against a live server")
struct SlowBodyTests {
    static let item = #"{"name":"Trickled","color":null,"status":{"inStock":{"quantity":1}}}"#

    static func post(_ token: String) -> String {
        "POST /v1/items HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(token)\r\nContent-Type: application/json\r\n"
            + "Content-Length: \(item.utf8.count)\r\n\r\n"
    }

    static func settings(timeout: Int, minBytesPerSecond: Int) -> [AbsoluteConfigKey: ConfigValue] {
        [
            "http.bodyTimeoutSeconds": .init(.int(timeout), isSecret: false),
            "http.bodyMinBytesPerSecond": .init(.int(minBytesPerSecond), isSecret: false),
        ]
    }

    /// Sends `pieces` one after another, waiting `gap` before each but the first, and stops as soon
    /// as the server has answered; then reads the answer to the connection's close.
    static func send(_ socket: RawSocket, _ pieces: [String], gap: Duration) throws -> String {
        for (index, piece) in pieces.enumerated() {
            if index > 0 {
                var ready = pollfd(fd: socket.descriptor, events: Int16(POLLIN), revents: 0)
                let milliseconds = Int32(gap.components.seconds * 1000 + gap.components.attoseconds / 1_000_000_000_000_000)
                if poll(&ready, 1, milliseconds) > 0 { break }  // the answer came: the rest is not sent
            }
            try socket.write(piece)
        }
        return try socket.readToClose()
    }

    /// The allowance of a body of any length fits a `TimeAmount`: an import may be 64 GiB, and its
    /// bytes times a billion nanoseconds overflow 64 bits at 9.2 GB.
    @Test func theAllowanceOfAHugeBodyDoesNotOverflow() {
        var clock = BodyClock(grace: .seconds(20), minBytesPerSecond: 1)
        clock.head(waitsToContinue: false)
        clock.body(64 << 30)
        #expect(clock.allowance == TimeAmount.seconds(20 + (1 << 30)), "capped at 2^30 s")
        var rate = BodyClock(grace: .seconds(20), minBytesPerSecond: 500)
        rate.head(waitsToContinue: false)
        rate.body(64 << 30)
        #expect(rate.allowance == TimeAmount.seconds(20 + (64 << 30) / 500) + TimeAmount.nanoseconds(Int64((64 << 30) % 500) * 2_000_000))
        let expired = rate.expired()
        #expect(!expired, "not over its allowance")
    }

    @Test(.timeLimit(.minutes(10)))
    func aBodyTrickledAByteAtATimeIsAnswered408AndChangesNothing() async throws {
        try await withTestApp { app in
            try await app.live(settings: Self.settings(timeout: 1, minBytesPerSecond: 1000)) { client in
                let port = try #require(client.port)
                // A byte every 200 ms: the body would take 14 s, its allowance is about 1 s.
                let bytes = Self.item.map { String($0) }
                let answer = try await blocking {
                    let socket = try RawSocket(port: port, raw: Self.post(app.editor)).failingStalledReads()
                    return try Self.send(socket, bytes, gap: .milliseconds(200))
                }
                #expect(answer.hasPrefix("HTTP/1.1 408 Request Timeout\r\n"), "\(answer)")
                #expect(answer.lowercased().contains("\r\nconnection: close\r\n"), "\(answer)")
                #expect(answer.contains(#""code":"requestTimeout""#), "\(answer)")
                let items = try await client.send(.get, "/v1/items", token: app.editor).json["items"] as? [[String: Any]]
                #expect(try #require(items).isEmpty, "nothing was written")
            }
        }
    }

    /// A body slower than its first allowance but keeping the rate: each piece extends its time.
    @Test(.timeLimit(.minutes(10)))
    func aSlowBodyThatKeepsTheRateIsTaken() async throws {
        try await withTestApp { app in
            try await app.live(settings: Self.settings(timeout: 1, minBytesPerSecond: 10)) { client in
                let port = try #require(client.port)
                // Three pieces 700 ms apart: 1.4 s in all, past the 1 s grace; after the first piece
                // the body has 1 s + 23 bytes / 10 a second, 3.3 s.
                let third = Self.item.utf8.count / 3
                let pieces = [
                    Self.post(app.editor) + String(Self.item.prefix(third)), String(Self.item.dropFirst(third).prefix(third)),
                    String(Self.item.dropFirst(2 * third)),
                ]
                let answer = try await blocking {
                    let socket = try RawSocket(port: port, raw: "").failingStalledReads()
                    try socket.write(pieces[0])
                    Thread.sleep(forTimeInterval: 0.7)
                    try socket.write(pieces[1])
                    Thread.sleep(forTimeInterval: 0.7)
                    try socket.write(pieces[2])
                    return try socket.readHead()
                }
                #expect(answer.hasPrefix("HTTP/1.1 201 Created\r\n"), "\(answer)")
            }
        }
    }
}
