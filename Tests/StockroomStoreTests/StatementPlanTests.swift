import Foundation
import GRDB
import Synchronization
import Testing

import StockroomStorage
import TestSupport
@testable import StockroomStore

/// Every statement the store runs, on the writer and on the readers, traced through one pass of
/// its operations, then planned by SQLite: a statement that reads a whole table costs more with
/// every row stored, so each such plan must be one the store means (a list, a snapshot, a walk
/// that stops early). Without migration 0010's index, the cascade of a device's deletion to its
/// `client_item_refs` is such a statement, and this test names it. A statement that builds a
/// temporary b-tree each time it runs (`OpenEphemeral`) must be listed too.
@Suite("Statement plans: no table read whole, and no temporary table built, unless meant")
struct StatementPlanTests {
    /// Statements that read a table whole on purpose, by a fragment of their SQL, and why.
    static let meantScans: [(fragment: String, why: String)] = [
        ("FROM items NOT INDEXED", "snapshots, and lists and name searches without a cursor, walk the items in seq order; a list stops at a full page"),
        ("FROM \"tokens\" ORDER BY", "the token list is every token"),
        ("FROM \"tokens\" WHERE (\"user\" = ?)", "createTokenIfNone asks once, as a demo server starts"),
        ("FROM devices_seen WHERE pending = 1", "a partial index of the devices whose presence waits to be published"),
        ("UPDATE presence_leases SET expires_at = ? WHERE daemon = ?", "renews every lease of the daemon, which on SQLite holds them all"),
    ]

    /// Statements that build a temporary b-tree on purpose (`OpenEphemeral`), by a fragment of their
    /// SQL, and why. None is on the path of an item write or a command: there, a temporary table per
    /// statement costs about as much as the rest of an insert (an IN list of three constants in the
    /// log's CHECK did until 0011; a device's references deleted by device, through its foreign key,
    /// did until they were deleted by primary key).
    static let meantTemporaryTables: [(fragment: String, why: String)] = [
        ("DELETE FROM clients WHERE", "a device's deletion cascades to its item references in two passes, as SQLite deletes through a foreign key"),
        ("LEFT JOIN devices_seen", "the hourly sweep of stale devices"),
        ("DELETE FROM presence_leases WHERE expires_at <= ? RETURNING", "a presence tick's expired leases: RETURNING gathers its rows first"),
        ("UPDATE presence_leases SET expires_at = ? WHERE daemon = ?", "a lease renewal, every few seconds, updates the column its index orders by"),
        ("json_each(?)", "the presence read: the set of devices asked about"),
        ("json_each(?1)", "a presence tick: the set of devices sighted, to learn which the store knows"),
        ("SELECT DISTINCT entity_id FROM changes", "a refilter: the items changed since the cursor, once per filter change"),
        ("INSERT INTO \"tokens\"", "a token's creation, an admin's: its role is checked against a list of three"),
    ]

    @Test("every statement of the store's operations searches by key or index, but the listed walks")
    func noStatementScansATableItDoesNotMeanTo() async throws {
        try await Self.withTracedOperations { database, planned in
            let scans = try await database.writer.read { db in
                try planned.compactMap { sql -> String? in
                    let whole = try Self.explain(db, "EXPLAIN QUERY PLAN", sql, column: "detail").filter(Self.readsATableWhole)
                    return whole.isEmpty ? nil : "\(sql)\n    \(whole.joined(separator: "; "))"
                }
            }
            EveryStoreOperation.expectOnlyMeant(scans, meant: Self.meantScans)
        }
    }

    @Test("no statement of the store's operations builds a temporary table, but the listed ones")
    func noStatementBuildsATemporaryTableItDoesNotMeanTo() async throws {
        try await Self.withTracedOperations { database, planned in
            // On the writer: SQLite leaves a write's constraints out of its program on a read-only
            // connection, as the readers are.
            let built = try await database.writer.write { db in
                try planned.filter { sql in try Self.explain(db, "EXPLAIN", sql, column: "opcode").contains("OpenEphemeral") }
            }
            EveryStoreOperation.expectOnlyMeant(built, meant: Self.meantTemporaryTables, doing: "build a temporary table")
        }
    }

    /// One column of `sql` explained by `explain` (`EXPLAIN QUERY PLAN`, or `EXPLAIN` for its program),
    /// with no value bound: SQLite reads each parameter as NULL, and neither depends on the values.
    static func explain(_ db: Database, _ explain: String, _ sql: String, column: String) throws -> [String] {
        let statement = try db.makeStatement(sql: explain + " " + sql)
        statement.setUncheckedArguments(StatementArguments())
        return try Row.fetchAll(statement).map { $0[column] as String }
    }

    /// Runs `body` with a database that ran one pass of `EveryStoreOperation`, and the plannable
    /// statements it traced, on the writer and on the readers.
    static func withTracedOperations(_ body: (AppDatabase, [String]) async throws -> Void) async throws {
        let statements = Mutex<Set<String>>([])
        try await withTemporaryFolder { folder in
            let database = try openTracedDatabase(in: folder) { sql in statements.withLock { _ = $0.insert(sql) } }
            // The migrations' statements run once, on an empty file.
            statements.withLock { $0.removeAll() }
            try await EveryStoreOperation.run(database)
            // What only SQLite's store has: the log read past the hub's memory, the snapshot in one value.
            _ = try await database.readLoggedChanges(after: try await database.resolve(.oldest), filter: FeedFilter(user: "erin", topics: [.item, .navigation]), limit: 100)
            _ = try await database.snapshot(user: "erin")
            let planned = statements.withLock { $0 }.filter(Self.isPlannable).sorted()
            #expect(planned.count > 40, "the trace saw \(planned.count) statements")
            try await body(database, planned)
        }
    }

    /// Reads, inserts, updates and deletes (not transaction control or PRAGMAs).
    static func isPlannable(_ sql: String) -> Bool {
        let head = sql.drop { $0 == " " || $0 == "\n" }.prefix(7).uppercased()
        return ["SELECT", "INSERT", "UPDATE", "DELETE", "WITH", "REPLACE"].contains { head.hasPrefix($0) }
            && !sql.contains("sqlite_master") && !sql.contains("sqlite_temp_master") && !sql.contains("grdb_migrations")
    }

    /// A plan line that reads a table (or an index) from one end to the other.
    static func readsATableWhole(_ detail: String) -> Bool {
        detail.hasPrefix("SCAN ") && !detail.hasPrefix("SCAN CONSTANT ROW") && !detail.contains("VIRTUAL TABLE")
    }
}
