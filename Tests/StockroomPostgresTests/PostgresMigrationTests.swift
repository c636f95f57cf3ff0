import Foundation
import Logging
import PostgresNIO
import StockroomCore
import StockroomStorage
import StockroomWire
import TestSupport
import Testing

@testable import StockroomPostgres

/// PostgreSQL's 0002 rewrites the retained navigation values into change-value form 2, as SQLite's 0007 does.
@Suite("PostgreSQL migrations", .enabled(if: TestPostgres.isAvailable, "PostgreSQL 15 is not installed"))
struct PostgresMigrationTests {
    @Test(.timeLimit(.minutes(10)))
    func navigationValuesOfForm1BecomeForm2() async throws {
        do { try await check() } catch { Issue.record("\(String(reflecting: error))") }
    }

    func check() async throws {
        let server = try await TestPostgres.shared()
        let url = try await server.newDatabase()
        let database = try #require(url.split(separator: "/").last?.split(separator: "?").first.map(String.init))
        let logger = Logger(label: "test")
        let connection = try await PostgresConnection.connect(
            configuration: .init(host: "127.0.0.1", port: server.port, username: server.user, password: nil, database: database, tls: .disable),
            id: 1, logger: logger)
        defer { Task { try? await connection.close() } }
        #expect(try await PostgresMigrator.migrate(connection, upTo: "0001_schema", logger: logger) == ["0001_schema"])
        let live = "6f1c2e4a-1111-4000-8000-000000000001"
        try await connection.query(
            """
            INSERT INTO items (id, name, search_name, in_stock, quantity, version, created_at, updated_at)
            VALUES (\(live), 'Keyboard', 'keyboard', true, 3, 1, 5, 5)
            """, logger: logger)
        let value = #"{"clientID":"phone","tab":"settings","path":[],"destination":{"deleteAlert":{"itemID":"\#(live)"}},"version":1,"updatedAt":"2026-11-22T06:00:00.123Z"}"#
        try await connection.query(
            "INSERT INTO changes (seq, entity, op, entity_id, owner, value, at) VALUES (1, 'navigation', 'upsert', 'phone', 'erin', \(value), 5)",
            logger: logger)
        #expect(try await PostgresMigrator.migrate(connection, logger: logger) == ["0002_navigation_values", "0003_presence", "0004_previous_values", "0005_presence_by_owner"])
        // An entry from before the log kept the item before a change says it was not recorded.
        var previous: [String?] = []
        for try await stored in try await connection.query("SELECT previous FROM changes", logger: logger).decode(String?.self) {
            previous.append(stored)
        }
        #expect(previous == [ItemBefore.unknownMark])

        var values: [String] = []
        for try await stored in try await connection.query("SELECT value FROM changes", logger: logger).decode(String.self) {
            values.append(stored)
        }
        let navigation = try JSONCoding.decoder().decode(Navigation.self, from: Data(try #require(values.first).utf8))
        #expect(navigation.state.destination == .deleteAlert(itemID: ItemID(live)!, alert: .deleteItem(name: "Keyboard")))
        #expect(values == [String(decoding: navigation.jsonBytes, as: UTF8.self)])
        #expect(values.first?.contains(#""url":"stockroom://settings/delete/\#(live)""#) == true)
        var format: [String] = []
        for try await stored in try await connection.query("SELECT value FROM meta WHERE key = 'change_value_format'", logger: logger)
            .decode(String.self)
        {
            format.append(stored)
        }
        #expect(format == ["2"])
    }
}
