import Foundation
import PostgresNIO
import StockroomStorage
@testable import StockroomPostgres
import TestSupport
import Testing

/// SQLite's `StatementPlanTests` for PostgreSQL: every statement the store runs through one pass of
/// its operations (`pg_stat_statements`, on a server of the test's own), planned as the daemon's
/// sessions keep it (generic, `plan_cache_mode = force_generic_plan`) with sequential scans made a
/// last resort (`enable_seqscan = off`): a `Seq Scan` left in such a plan is one no index can
/// spare, and an index scanned without a condition on its first column is read from end to end. Either
/// costs more with every row stored, so it must be a walk the store means.
@Suite("PostgreSQL: statement plans", .enabled(if: TestPostgres.isAvailable, "PostgreSQL 15 is not installed"))
struct PostgresStatementPlanTests {
    /// Statements that read a table whole on purpose, by a fragment of their SQL, and why.
    static let meantScans: [(fragment: String, why: String)] = [
        ("FROM items WHERE deleted_at IS NULL", "snapshots, and lists and name searches without a cursor, walk the items in seq order; a list stops at a full page"),
        ("FROM devices_seen WHERE pending", "a partial index of the devices whose presence waits to be published"),
        ("DELETE FROM devices_seen d WHERE d.last_seen_at < $1",
         "the hourly sweep of devices seen and never written: the planner picks its anti-join with clients by the tables' sizes"),
        ("UPDATE presence_leases SET expires_at = $1 WHERE daemon = $2",
         "renews every lease of the daemon: the daemon's share of all leases, so the whole read costs at most the number of daemons times that"),
        ("FROM tokens ORDER BY created_at, id", "the token list is every token"),
        ("FROM tokens WHERE user_id = $1 AND revoked_at IS NULL", "createTokenIfNone asks once, as a demo server starts"),
    ]

    @Test(.timeLimit(.minutes(10)))
    func noStatementScansATableItDoesNotMeanTo() async throws {
        // Without autovacuum, so that the plans are made without statistics, as they are in a run
        // of a few seconds: its ANALYZE (due a minute in, under a full test run) gives the planner
        // tables of a few rows, which it then reads whole (a merge join over a whole index, say),
        // and the statements found walking change from one run to the next.
        let server = try await TestPostgres.start(
            settings: ["shared_preload_libraries": "pg_stat_statements", "pg_stat_statements.track": "all", "autovacuum": "off"])
        defer { server.stop() }
        let store = try await PostgresStore.open(url: PostgresURL(try await server.newDatabase()), limits: StoreLimits(), deadline: TestPostgres.storeDeadline)
        let running = Task { try await store.run() }
        defer { running.cancel() }
        let logger = Logger(label: "test.plans")
        try await store.read { connection in
            try await connection.query("CREATE EXTENSION IF NOT EXISTS pg_stat_statements", logger: logger)
            _ = try await connection.query("SELECT pg_stat_statements_reset()", logger: logger)
        }
        try await EveryStoreOperation.run(store)

        let (planned, scans, unplannable) = try await store.read { connection in
            func strings(_ query: PostgresQuery) async throws -> [String] {
                var values: [String] = []
                for try await row in try await connection.query(query, logger: logger) { values.append(try row.decode(String.self)) }
                return values
            }
            // A statement of a trigger's function (not top level) may name the function's variables:
            // it is planned when it can be prepared on its own.
            var nested: Set<String> = []
            var statements: [String] = []
            let traced = try await connection.query(
                "SELECT query, toplevel FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())",
                logger: logger)
            for try await (query, toplevel) in traced.decode((String, Bool).self) where Self.isPlannable(query) {
                statements.append(query)
                if !toplevel { nested.insert(query) }
            }
            statements.sort()
            // Each index's first column: a condition on a later column alone still reads the whole index.
            var leading: [String: String] = [:]
            let indexes = try await connection.query(
                """
                SELECT c.relname::text, a.attname::text FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
                JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = i.indkey[0]
                """, logger: logger)
            for try await (index, column) in indexes.decode((String, String).self) { leading[index] = column }
            try await connection.query("SET plan_cache_mode = force_generic_plan", logger: logger)
            try await connection.query("SET enable_seqscan = off", logger: logger)
            var scans: [String] = []
            var unplannable: [String] = []
            for sql in statements {
                do {
                    try await connection.query(PostgresQuery(unsafeSQL: "PREPARE stockroom_plan AS " + sql), logger: logger)
                } catch {
                    if !nested.contains(sql) { unplannable.append(sql) }
                    continue
                }
                let count = try await strings(
                    "SELECT cardinality(parameter_types)::text FROM pg_prepared_statements WHERE name = 'stockroom_plan'"
                ).first.flatMap { Int($0) } ?? 0
                let arguments = count == 0 ? "" : "(" + Array(repeating: "NULL", count: count).joined(separator: ", ") + ")"
                let plan = try await strings(PostgresQuery(unsafeSQL: "EXPLAIN (COSTS OFF, FORMAT JSON) EXECUTE stockroom_plan" + arguments))
                try await connection.query("DEALLOCATE stockroom_plan", logger: logger)
                let whole = try Self.wholeReads(inPlan: plan.joined(), leading: leading)
                if !whole.isEmpty { scans.append("\(sql)\n    \(whole.joined(separator: "; "))") }
            }
            try await connection.query("RESET enable_seqscan", logger: logger)
            try await connection.query("RESET plan_cache_mode", logger: logger)
            return (statements, scans, unplannable)
        }
        #expect(planned.count > 40, "pg_stat_statements saw \(planned.count) statements")
        #expect(unplannable.isEmpty, "statements PREPARE could not take:\n\(unplannable.joined(separator: "\n"))")
        EveryStoreOperation.expectOnlyMeant(scans, meant: Self.meantScans)
    }

    /// The nodes of an `EXPLAIN (FORMAT JSON)` plan that read a relation whole: a sequential scan,
    /// or an index scanned without a condition on its first column (`leading`, by index name), which
    /// PostgreSQL 15 reads from one end to the other.
    static func wholeReads(inPlan json: String, leading: [String: String]) throws -> [String] {
        var found: [String] = []
        func visit(_ node: [String: Any]) {
            let type = node["Node Type"] as? String ?? ""
            if type == "Seq Scan" {
                found.append("Seq Scan on \(node["Relation Name"] as? String ?? "?")")
            } else if type.hasSuffix("Index Scan") || type == "Index Only Scan" {
                let index = node["Index Name"] as? String ?? "?"
                let condition = node["Index Cond"] as? String ?? ""
                if let column = leading[index], !condition.contains("(\(column) ") {
                    found.append("\(type) using \(index) without a condition on \(column)")
                }
            }
            for child in node["Plans"] as? [[String: Any]] ?? [] { visit(child) }
        }
        let plans = try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [[String: Any]] ?? []
        for plan in plans { if let root = plan["Plan"] as? [String: Any] { visit(root) } }
        return found
    }

    /// Reads, inserts, updates and deletes (not transaction control, settings, locks or the catalog).
    static func isPlannable(_ sql: String) -> Bool {
        let head = sql.drop { $0 == " " || $0 == "\n" }.prefix(7).uppercased()
        return ["SELECT", "INSERT", "UPDATE", "DELETE", "WITH"].contains { head.hasPrefix($0) }
            && !sql.contains("pg_stat_statements") && !sql.contains("pg_catalog") && !sql.contains("pg_prepared_statements")
            && !sql.contains("pg_database") && !sql.contains("stockroom_migrations")
    }
}
