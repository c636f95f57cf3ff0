import Foundation
import Logging
import PostgresNIO
@testable import StockroomPostgres
import StockroomStorage
import TestSupport

/// Several `PostgresStore`s on one new database, each with its own pool, listener and poll: the
/// daemons of a deployment, in one process. Their deadline (and so their lock timeout) is long: a
/// write that waits on another daemon's lock can pass the default five seconds on a full test
/// run's busy two cores, and answer 503 instead of what the test is about.
func withDaemons<T>(
    _ count: Int, limits: StoreLimits = StoreLimits(), pollInterval: Duration = .seconds(1), listens: Bool = true, maximumConnections: Int = 20,
    deadline: Duration = .seconds(30), _ body: (_ stores: [PostgresStore], _ url: PostgresURL) async throws -> T
) async throws -> T {
    let url = try PostgresURL(try await TestPostgres.shared().newDatabase())
    var stores: [PostgresStore] = []
    for _ in 0..<count {
        stores.append(
            try await PostgresStore.open(
                url: url, limits: limits, maximumConnections: maximumConnections, deadline: deadline, pollInterval: pollInterval, listens: listens,
                logger: Logger(label: "test.daemon")))
    }
    let running = stores.map { store in Task { try await store.run() } }
    defer { running.forEach { $0.cancel() } }
    let value = try await body(stores, url)
    for task in running {
        task.cancel()
        _ = await task.result
    }
    return value
}

/// A connection of the test's own to the database (to terminate backends, read tables).
func withConnection<T>(_ url: PostgresURL, _ body: (PostgresConnection) async throws -> T) async throws -> T {
    let connection = try await PostgresConnection.connect(
        configuration: try url.connectionConfiguration(), id: 99, logger: Logger(label: "test.connection"))
    do {
        let value = try await body(connection)
        try? await connection.close()
        return value
    } catch {
        try? await connection.close()
        throw error
    }
}

extension PostgresConnection {
    /// Every row's values of one column.
    func values<T: PostgresDecodable & Sendable>(_ query: PostgresQuery, as type: T.Type) async throws -> [T] {
        var values: [T] = []
        for try await value in try await self.query(query, logger: Logger(label: "test.connection")).decode(T.self) { values.append(value) }
        return values
    }
}
