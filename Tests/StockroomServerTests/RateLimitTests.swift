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
                // The writes go out at once: the bucket refills one write a second, so only a run
                // of twenty limiter checks spread over eighteen seconds could let every one pass.
                let responses = try await withThrowingTaskGroup(of: TestResponse.self) { group in
                    for index in 0..<20 {
                        group.addTask {
                            try await client.send(.post, "/v1/items", token: app.editor, json: draftJSON(name: "Item \(index)"))
                        }
                    }
                    return try await group.reduce(into: []) { $0.append($1) }
                }
                let statuses = responses.map(\.status)
                #expect(Set(statuses).isSubset(of: [.created, .tooManyRequests]), "\(statuses)")
                #expect(statuses.filter { $0 == .created }.count >= 2, "the burst passes")
                let response = try #require(responses.first { $0.status == .tooManyRequests })
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
