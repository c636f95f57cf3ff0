import Foundation
import Logging
import PostgresNIO
import StockroomStorage
@testable import StockroomPostgres
import TestSupport
import Testing

/// No storage call waits for ever, whatever happens to its connection (`PostgresCalls`).
@Suite("PostgreSQL calls end", .enabled(if: TestPostgres.isAvailable))
struct PostgresCallTests {
    /// A query written to a connection NIO has already closed is never answered by postgres-nio
    /// (seen after PostgreSQL restarts, when the pool handed out a connection the server had just
    /// closed); the call answers `unavailable` instead, and the store goes on.
    @Test(.timeLimit(.minutes(10)))
    func aCallWhoseConnectionClosesUnderItAnswersUnavailable() async throws {
        try await withDaemons(1) { stores, _ in
            let store = stores[0]
            let outcome: Result<Int, any Error> = await Result(catching: {
                try await store.read { connection in
                    try await connection.close()
                    return try await connection.values("SELECT 1", as: Int.self).count
                }
            })
            guard case .failure(let error) = outcome, case .unavailable = error as? StoreError else {
                Issue.record("expected unavailable, got \(outcome)")
                return
            }
            #expect("\(error)".contains("closed during the call"), "\(error)")
            #expect(!"\(error)".contains("outcome"), "a read has no outcome to doubt: \(error)")
            // The pool replaced the connection: the next call is answered.
            let head = try await store.resolve(.now)
            #expect(head >= 0)
        }
    }

    /// A health check is answered within its bound however long the write it makes waits.
    @Test(.timeLimit(.minutes(10)))
    func theWriteProbeAnswersWithinItsBoundWhileTheWriteWaits() async throws {
        try await withDaemons(1) { stores, url in
            let store = stores[0]
            try await withConnection(url) { blocker in
                // Another session holds the row the probe writes.
                try await blocker.query("BEGIN", logger: Logger(label: "test"))
                try await blocker.query("UPDATE meta SET value = '0' WHERE key = 'ready_probe'", logger: Logger(label: "test"))
                let message = await store.writeProbe()
                #expect(message?.contains("did not answer within") == true, "\(message ?? "nil")")
                try await blocker.query("ROLLBACK", logger: Logger(label: "test"))
            }
            // Once the row is free, a probe commits again (each within its own two seconds, which a
            // loaded machine's first one after the wait can miss: the waiting write commits first).
            try await eventually("a probe commits once the row is free") { await store.writeProbe() == nil }
        }
    }
}

extension Result where Failure == any Error {
    init(catching body: () async throws -> Success) async {
        do {
            self = .success(try await body())
        } catch {
            self = .failure(error)
        }
    }
}

/// `sslmode` as libpq reads it.
@Suite("PostgreSQL URL's sslmode", .enabled(if: TestPostgres.isAvailable))
struct PostgresSSLModeTests {
    /// `prefer` (the default) loads no trusted roots and falls back to plain text on a server
    /// without TLS, as the test cluster is; `require` and `verify-full` refuse such a server.
    @Test
    func preferFallsBackToPlainTextAndRequireRefusesAServerWithoutTLS() async throws {
        let plain = try await TestPostgres.shared().newDatabase()
        let base = plain.replacingOccurrences(of: "?sslmode=disable", with: "")
        let preferred = try PostgresURL(base)
        #expect(preferred.sslMode == .prefer)
        let store = try await PostgresStore.open(url: preferred, deadline: TestPostgres.storeDeadline)
        let running = Task { try await store.run() }
        #expect(try await store.resolve(.now) == 0)
        running.cancel()
        _ = await running.result
        for mode in ["require", "verify-full"] {
            let url = try PostgresURL(base + "?sslmode=" + mode)
            await #expect(throws: (any Error).self) { _ = try await PostgresStore.open(url: url) }
        }
        #expect(throws: PostgresStoreError.self) { try PostgresURL(base + "?sslmode=verify-ca") }
    }
}
