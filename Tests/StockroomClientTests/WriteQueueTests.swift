import Foundation
import StockroomClient
import Testing

@Suite("Offline queue and retries", .timeLimit(.minutes(10)))
@MainActor
struct WriteQueueTests {
    /// A command the server answers with 500 is sent a bounded number of times
    /// (`serverErrorAttempts`), then leaves the queue for `failedWrites` with that answer, and the
    /// command behind it is delivered.
    @Test(.timeLimit(.minutes(10)))
    func aCommandAnsweredWithServerErrorsEndsInFailures() async throws {
        var options = testStoreOptions
        options.serverErrorAttempts = 3
        try await withServer { server in try await withStoreBehindProxy(server, options: options) { proxy, store in
            proxy.failAnswers(toRequestsStartingWith: "POST /v1/clients/phone/commands")
            let failing = try store.send(.openAdd)
            try await waitUntil(store, "the command given up") { $0.failedWrites.count == 1 }
            #expect(proxy.failedAnswers == 3)
            #expect(store.failedWrites.first?.id == failing.id && store.failedWrites.first?.error.status == 500)
            #expect(store.pendingWrites.isEmpty)
            #expect(store.navigation.state.destination == nil, "its optimistic state is gone")

            proxy.failAnswers(toRequestsStartingWith: nil)
            _ = try store.send(.selectTab(tab: .settings))
            try await waitUntil(store, "the next command delivered") { $0.pendingWrites.isEmpty && $0.navigation.version == 1 }
            #expect(store.navigation.state.tab == .settings && proxy.failedAnswers == 3)
        } }
    }

    @Test func aCommandWhoseAnswerIsLostIsRetriedWithTheSameKeyAndAppliedOnce() async throws {
        try await withServer { server in try await withStoreBehindProxy(server) { proxy, store in
            proxy.loseNextAnswer(toRequestStartingWith: "POST /v1/clients/phone/commands")
            let queued = try store.send(.openAdd)
            try await waitUntil(store, "the command answered") { $0.pendingWrites.isEmpty }
            #expect(proxy.droppedAnswers == 1, "the first answer was lost")

            // The server applied it once: one change, with the command's key, and navigation version 1.
            let log = try await server.client().changes(from: .beginning)
            #expect(
                log.changes.filter { $0.entity != .presence }.map(\.origin)
                    == [Change.Origin(clientID: "phone", idempotencyKey: queued.idempotencyKey)])
            #expect(try await server.client().navigation(of: "phone").version == 1)
            #expect(store.navigation.version == 1)
            #expect(store.navigation.state.destination == .add(draft: .blank))
            #expect(store.failedWrites.isEmpty)

            // The retry was answered from the server's stored outcome, not applied again.
            let replay = try await store.client.send(.openAdd, from: "phone", idempotencyKey: queued.idempotencyKey)
            #expect(replay.replayed)
            #expect(replay.navigation.version == 1)
        } }
    }

    @Test func theOfflineQueueSurvivesReopeningItsFileAndDrainsInOrder() async throws {
        try await withServer { server in
            let path = server.clientFile("phone-queue.sqlite")
            let client = try server.client()
            await server.stop()

            // Offline: the commands apply optimistically and wait in the queue.
            var first: SyncedStore? = try SyncedStore(client: client, clientID: "phone", queuePath: path, options: testStoreOptions)
            first?.start()
            for name in ["Offline 1", "Offline 2"] {
                try first?.send(.openAdd)
                try first?.editDraft { $0.name = name }
                try first?.send(.save())
            }
            #expect(first?.items.map(\.name) == ["Offline 1", "Offline 2"], "optimistic inserts show at once")
            try await waitUntil(try #require(first), "offline") { if case .offline = $0.connection { true } else { false } }
            let keys = try #require(first?.pendingWrites.map(\.idempotencyKey))
            #expect(keys.count == 6)
            // The app is killed.
            first?.stop()
            first = nil

            // The file still holds them, in order.
            let reopened = try WriteQueue(path: path)
            #expect(try reopened.pending(for: "phone").map(\.idempotencyKey) == keys)
            #expect(try reopened.pending(for: "phone").map(\.write.name) == ["openAdd", "updateDraft", "save", "openAdd", "updateDraft", "save"])

            // A new run shows them before it hears from the server, and delivers them once the server is back.
            let second = try SyncedStore(client: client, clientID: "phone", queuePath: path, options: testStoreOptions)
            #expect(second.items.map(\.name) == ["Offline 1", "Offline 2"])
            try await server.start()
            second.start()
            defer { second.stop() }
            try await waitUntil(second, "the queue drained") { $0.pendingWrites.isEmpty && $0.items.count == 2 }
            let serverItems = try await client.allItems()
            #expect(serverItems.map(\.name) == ["Offline 1", "Offline 2"])
            #expect(second.items == serverItems)
            #expect(second.failedWrites.isEmpty)
            #expect(try WriteQueue(path: path).pending(for: "phone").isEmpty)

            // Applied once each, in the order sent: the log's origins are the queue's keys in order.
            let log = try await client.changes(from: .beginning, limit: 100)
            let navigationKeys = log.changes.filter { $0.entity == .navigation }.compactMap(\.origin.idempotencyKey)
            #expect(navigationKeys == keys)
        }
    }
}
