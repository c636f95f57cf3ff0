import Configuration
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import StockroomCore
import Testing

@testable import StockroomServer

/// One client cannot monopolise the single writer (issue #14, point 6).
@Suite("Per-token write rate limit")
struct RateLimitTests {
    @Test func theBucketRefillsAtTheRateUpToTheBurst() throws {
        let limiter = WriteRateLimiter(rate: 2, burst: 3)
        let start = ContinuousClock.now
        for _ in 0..<3 { #expect(limiter.take("a", now: start) == nil) }
        let wait = try #require(limiter.take("a", now: start))
        #expect(wait == .milliseconds(500))
        #expect(limiter.take("b", now: start) == nil, "another token has its own bucket")
        #expect(limiter.take("a", now: start + .milliseconds(500)) == nil)
        #expect(limiter.take("a", now: start + .milliseconds(500)) != nil)
        // A long pause refills to the burst, never beyond it.
        for _ in 0..<3 { #expect(limiter.take("a", now: start + .seconds(60)) == nil) }
        #expect(limiter.take("a", now: start + .seconds(60)) != nil)
    }

    @Test func overTheRateWritesAre429WithRetryAfterAndChangeNothing() async throws {
        try await withTestApp { app in
            let settings: [AbsoluteConfigKey: ConfigValue] = [
                "limits.writesPerSecond": .init(.int(1), isSecret: false),
                "limits.writeBurst": .init(.int(2), isSecret: false),
            ]
            try await app.test(settings: settings) { client in
                var statuses: [HTTPResponse.Status] = []
                var refused: TestResponse?
                // The bucket refills one write a second while the test runs: on a slow machine a few
                // more writes than the burst may pass before one is refused, so write until one is.
                for index in 0..<20 where refused == nil {
                    let response = try await client.send(.post, "/v1/items", token: app.editor, json: draftJSON(name: "Item \(index)"))
                    statuses.append(response.status)
                    if response.status == .tooManyRequests { refused = response }
                }
                #expect(statuses.prefix(2) == [.created, .created])
                let response = try #require(refused)
                #expect(response.errorCode == "tooManyRequests")
                #expect(Int(response.headers[.retryAfter] ?? "") ?? 0 >= 1)
                let created = try await app.database.listItems(after: nil, limit: 100, query: nil, status: nil).items.count
                #expect(created == statuses.filter { $0 == .created }.count)

                // Reads are not limited; another token has its own budget.
                #expect(try await client.send(.get, "/v1/items", token: app.editor).status == .ok)
                #expect(try await client.send(.post, "/v1/items", token: app.otherEditor, json: draftJSON(name: "Otto's")).status == .created)
                let metrics = String(buffer: try await client.send(.get, "/metrics").body)
                #expect(metrics.contains("stockroom_rate_limited_total"))
            }
        }
    }
}
