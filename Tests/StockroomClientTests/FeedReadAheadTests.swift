import Foundation
import TestSupport
import Testing

@testable import StockroomClient

/// How far a feed's connection reads ahead of a reader that does not read: as far as its buffer's
/// limit, counted in the bytes the events came in, over every transport.
@Suite("A feed's read-ahead, against a live server", .timeLimit(.minutes(10)))
struct FeedReadAheadTests {
    static let items = 300
    static let limit = 16 << 10

    static func changes(in runs: [[FeedEvent]]) -> Int {
        runs.reduce(0) { count, run in count + run.count { if case .change = $0 { true } else { false } } }
    }

    // Long-polls of 50 changes: a page (about 24 KB) is more than the limit, and 300 changes are six.
    @Test(arguments: [FeedTransport.serverSentEvents, .webSocket, .longPoll(wait: .seconds(5), limit: 50)])
    func theConnectionStopsOnceItsBufferHoldsTheLimitInBytes(over transport: FeedTransport) async throws {
        try await withServer { server in
            let client = try server.client()
            for index in 0..<Self.items { _ = try await client.createItem(.named("Read ahead \(index)")) }
            let buffer = FeedBuffer(limit: Self.limit)
            let runner = FeedRunner(client: client, options: testFeedOptions(transport), buffer: buffer)
            let task = Task { await runner.run(from: .beginning) }
            defer { task.cancel() }

            // The 300 changes are about 140 KB: the runner stops with part of them waiting.
            try await eventually("the runner waits for the reader") { buffer.waiting.runnerWaits }
            let waiting = buffer.waiting
            #expect(waiting.bytes >= Self.limit, "it waits only once the limit is reached")
            let first = try #require(try await buffer.next())
            #expect(first.reduce(0) { $0 + $1.count } == waiting.events)
            let taken = Self.changes(in: first)
            #expect(taken > 0 && taken < Self.items, "\(taken) of \(Self.items) changes read ahead of the reader")

            // Taking them lets it go on: the rest comes, each change once.
            var seen = taken
            while seen < Self.items, let events = try await buffer.next() { seen += Self.changes(in: events) }
            #expect(seen == Self.items)
        }
    }
}
