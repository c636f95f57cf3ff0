import Foundation
@testable import StockroomClient
import Testing

/// How delivery waits: exponential backoff with jitter, `Retry-After` honoured, and which answers
/// end a write's attempts.
@Suite("Retries: backoff, jitter, Retry-After", .timeLimit(.minutes(10)))
@MainActor
struct RetryTests {
    /// Attempt n waits between a tenth and all of min(maximum, initial x 2^(n-1)), never the same
    /// for every client (jitter); a server's `Retry-After` is waited out when it is longer.
    @Test func backoffGrowsWithJitterUpToItsMaximumAndHonoursRetryAfter() {
        let backoff = Backoff(initial: .milliseconds(100), maximum: .seconds(2))
        for attempt in 1...8 {
            let ceiling = min(Duration.seconds(2), .milliseconds(100) * (1 << (attempt - 1)))
            let delays = (0..<200).map { _ in backoff.delay(attempt: attempt) }
            #expect(delays.allSatisfy { $0 >= ceiling * 0.1 && $0 <= ceiling }, "attempt \(attempt)")
            #expect(Set(delays).count > 100, "jittered, attempt \(attempt)")
        }
        let unavailable = StockroomError(status: 503, code: .unavailable, message: "later", retryAfter: .seconds(7))
        #expect(backoff.delay(attempt: 1, after: unavailable) == .seconds(7))
        #expect(backoff.delay(attempt: 30, after: unavailable) == .seconds(7), "longer than the backoff's maximum")
        let brief = StockroomError(status: 429, code: .tooManyRequests, message: "slow down", retryAfter: .milliseconds(1))
        #expect(backoff.delay(attempt: 8, after: brief) >= .milliseconds(200), "the backoff's, when longer")
        #expect(backoff.delay(attempt: 1, after: TransportError("no answer")) <= .milliseconds(100))
    }

    /// `503` and `429` with `Retry-After` say when to come back: delivery waits that long, and
    /// however often they come they never end the write, unlike server errors; once the server
    /// takes it, it applies.
    @Test(arguments: [503, 429])
    func anAnswerThatSaysLaterIsWaitedOutAndNeverEndsTheWrite(status: Int) async throws {
        var options = testStoreOptions
        options.serverErrorAttempts = 2
        // Not started: each delivery attempt is made here, one at a time.
        try await withServer { server in try await withStoreBehindProxy(server, options: options, started: false) { proxy, store in
            proxy.failAnswers(toRequestsStartingWith: "POST /v1/items", status: status, retryAfter: 7)
            let write = try store.createItem(.named("Kettle"))
            for attempt in 1...4 {
                guard case .retry(let delay) = await store.deliverNext() else {
                    Issue.record("attempt \(attempt) was not a retry")
                    return
                }
                #expect(delay >= .seconds(7), "attempt \(attempt) waits the Retry-After")
            }
            #expect(proxy.failedAnswers == 4 && store.failedWrites.isEmpty && store.pendingWrites.map(\.id) == [write.id])

            proxy.failAnswers(toRequestsStartingWith: nil)
            guard case .delivered = await store.deliverNext() else {
                Issue.record("not delivered once the server takes it")
                return
            }
            #expect(store.pendingWrites.isEmpty && store.failedWrites.isEmpty)
            #expect(try await server.client().item(write.write.itemID!).name == "Kettle")
        } }
    }

    /// A `500` with `Retry-After` is waited out too, and still counts towards `serverErrorAttempts`.
    @Test func aServerErrorWithRetryAfterIsWaitedOutAndCounted() async throws {
        var options = testStoreOptions
        options.serverErrorAttempts = 2
        try await withServer { server in try await withStoreBehindProxy(server, options: options, started: false) { proxy, store in
            proxy.failAnswers(toRequestsStartingWith: "POST /v1/items", status: 500, retryAfter: 5)
            let write = try store.createItem(.named("Kettle"))
            guard case .retry(let delay) = await store.deliverNext() else {
                Issue.record("the first 500 was not a retry")
                return
            }
            #expect(delay >= .seconds(5))
            guard case .delivered = await store.deliverNext() else {
                Issue.record("the second 500 did not end the write")
                return
            }
            #expect(store.failedWrites.map(\.id) == [write.id] && store.failedWrites.first?.error.status == 500)
            #expect(store.failedWrites.first?.write.draft == .named("Kettle"), "the draft is kept")
        } }
    }
}
