import Foundation
import StockroomClient
import Testing

/// A store's waits (`perform`, `waitUntilDelivered`, `waitUntilLoaded`) end when the task that
/// waits is cancelled or the store is stopped, whether or not a server ever answers.
@Suite("A store's waits end", .timeLimit(.minutes(10)))
@MainActor
struct StoreWaitTests {
    /// What `body` returned, or nil when it had not returned after 20 s: a wait that never ends
    /// fails the test instead of holding it (its task is left waiting).
    static func within<T: Sendable>(_ body: @escaping @MainActor @Sendable () async -> T) async -> T? {
        let (outcomes, outcome) = AsyncStream<T?>.makeStream()
        Task { @MainActor in outcome.yield(await body()) }
        let timer = Task {
            try? await Task.sleep(for: .seconds(20))
            outcome.yield(nil)
        }
        defer { timer.cancel() }
        for await value in outcomes { return value }
        return nil
    }

    /// A store that no server answers (nothing listens on port 1).
    static func unanswered() throws -> SyncedStore {
        let client = StockroomClient(baseURL: URL(string: "http://127.0.0.1:1")!, token: "sr_none", requestTimeout: .seconds(2))
        return try SyncedStore(client: client, clientID: "phone", queue: .inMemory(), options: testStoreOptions)
    }

    @Test func aCancelledWaitEndsAndItsCommandStaysQueued() async throws {
        let store = try Self.unanswered()
        store.start()
        defer { store.stop() }
        let perform = Task { try await store.perform(.selectTab(tab: .settings)) }
        let delivered = Task { await store.waitUntilDelivered() }
        let loaded = Task { await store.waitUntilLoaded() }
        perform.cancel()
        delivered.cancel()
        loaded.cancel()
        let outcome = await Self.within { await perform.result }
        guard case .failure(let error)? = outcome else {
            Issue.record("perform did not end when cancelled: \(String(describing: outcome))")
            return
        }
        #expect(error is CancellationError, "\(error)")
        #expect(await Self.within { await delivered.value } != nil, "waitUntilDelivered did not end when cancelled")
        #expect(await Self.within { await loaded.value } != nil, "waitUntilLoaded did not end when cancelled")
        #expect(store.pendingWrites.count == 1, "the command stays queued")
    }

    @Test func afterStopAWaitEndsAtOnce() async throws {
        let store = try Self.unanswered()
        store.start()
        store.stop()
        let outcome = await Self.within { await Result { try await store.perform(.selectTab(tab: .settings)) } }
        guard case .failure(let error)? = outcome else {
            Issue.record("perform on a stopped store did not end: \(String(describing: outcome))")
            return
        }
        #expect(error is CancellationError, "\(error)")
        #expect(await Self.within { await store.waitUntilDelivered() } != nil)
        #expect(await Self.within { await store.waitUntilLoaded() } != nil)
        #expect(store.pendingWrites.count == 1, "the command stays queued for the next start()")
    }
}

extension Result where Failure == any Error {
    @MainActor init(_ body: @MainActor () async throws -> Success) async {
        do {
            self = .success(try await body())
        } catch {
            self = .failure(error)
        }
    }
}
