import Foundation
import PostgresNIO
@testable import StockroomPostgres
import TestSupport
import Testing

/// The plans PostgreSQL makes for the write path's statements on the daemon's own sessions. Each
/// pooled connection keeps a generic plan of every prepared statement once it has run a few times,
/// made without the parameters' values: a plan that scans a whole table costs every batch the
/// table's size.
@Suite("PostgreSQL: the write path's plans", .enabled(if: TestPostgres.isAvailable, "PostgreSQL 15 is not installed"))
struct PostgresPlanTests {
    /// A batch of PUTs' update (`Statements.UpdateItemsByID`), planned as the daemon's sessions
    /// keep it (generic, `plan_cache_mode = force_generic_plan`) on a table of 2,000 items: it finds
    /// its rows through the indexes. With PostgreSQL's default `random_page_cost` (4.0) the planner
    /// scanned all of `items` to join it with the batch's ids.
    @Test(.timeLimit(.minutes(10)))
    func aBatchOfPutsFindsItsItemsByIndex() async throws {
        try await withDaemons(1) { stores, _ in
            let store = stores[0]
            let plan = try await store.read { connection in
                let logger = Logger(label: "test.plan")
                try await connection.query(
                    """
                    INSERT INTO items (id, name, search_name, in_stock, quantity, version, created_at, updated_at)
                    SELECT gen_random_uuid()::text, 'Item ' || n, 'item ' || n, true, n, 1, n, n FROM generate_series(1, 2000) n
                    """, logger: logger)
                try await connection.query("ANALYZE items", logger: logger)
                func strings(_ query: PostgresQuery) async throws -> [String] {
                    var values: [String] = []
                    for try await row in try await connection.query(query, logger: logger) { values.append(try row.decode(String.self)) }
                    return values
                }
                let ids = try await strings("SELECT id FROM items ORDER BY seq LIMIT 5")
                func column(_ value: String?) -> String {
                    "ARRAY[" + ids.map { _ in value.map { "'\($0)'" } ?? "NULL" }.joined(separator: ", ") + "]::text[]"
                }
                let arguments = ["ARRAY[" + ids.map { "'\($0)'" }.joined(separator: ", ") + "]::text[]"]
                    + [column("Renamed"), column("renamed"), column(nil), column(nil), column(nil), column(nil), column("true"), column("7"),
                       column(nil), column("1"), column(nil)]
                let types = Array(repeating: "text[]", count: arguments.count).joined(separator: ", ")
                try await connection.query("SET plan_cache_mode = force_generic_plan", logger: logger)
                try await connection.query(
                    PostgresQuery(unsafeSQL: "PREPARE stockroom_plan_test(\(types)) AS \(Statements.UpdateItemsByID.sql)"), logger: logger)
                let lines = try await strings(
                    PostgresQuery(unsafeSQL: "EXPLAIN (COSTS OFF) EXECUTE stockroom_plan_test(\(arguments.joined(separator: ", ")))"))
                try await connection.query("DEALLOCATE stockroom_plan_test", logger: logger)
                try await connection.query("RESET plan_cache_mode", logger: logger)
                return lines
            }
            #expect(!plan.isEmpty)
            #expect(!plan.contains { $0.contains("Seq Scan on items") }, "\(plan.joined(separator: "\n"))")
            #expect(plan.contains { $0.contains("Index Scan using items_id_key") }, "\(plan.joined(separator: "\n"))")
        }
    }
}
