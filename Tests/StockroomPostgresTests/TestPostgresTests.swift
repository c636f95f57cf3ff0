import Foundation
import Logging
import PostgresNIO
import TestSupport
import Testing

/// The PostgreSQL the backend's tests run on: a real server, started and stopped by the tests.
@Suite("A throwaway PostgreSQL for the tests", .enabled(if: TestPostgres.isAvailable, "PostgreSQL 15 is not installed"))
struct TestPostgresTests {
    @Test(.timeLimit(.minutes(10)))
    func aClusterStartsAnswersAQueryAndStopsByItsPID() async throws {
        let server = try await TestPostgres.start()
        defer { server.stop() }
        try await server.createDatabase("stockroom_test")
        let connection = try await PostgresConnection.connect(
            configuration: .init(host: "127.0.0.1", port: server.port, username: "postgres", password: nil, database: "stockroom_test", tls: .disable),
            id: 1, logger: Logger(label: "test"))
        let rows = try await connection.query("SELECT 40 + 2, current_database()", logger: Logger(label: "test"))
        var answers: [(Int, String)] = []
        for try await (number, database) in rows.decode((Int, String).self) { answers.append((number, database)) }
        try await connection.close()
        #expect(answers.map(\.0) == [42] && answers.map(\.1) == ["stockroom_test"])

        let folder = server.folder
        server.stop()
        #expect(!server.isRunning)
        #expect(!FileManager.default.fileExists(atPath: folder.path))
    }
}
