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
/// that stops early). Without migration 0010's index, the `client_item_refs` delete of every
/// command that opens or closes an edit is such a statement, and this test names it.
@Suite("Statement plans: no table read whole unless meant")
struct StatementPlanTests {
    /// Statements that read a table whole on purpose, by a fragment of their SQL, and why.
    static let meantScans: [(fragment: String, why: String)] = [
        ("FROM items NOT INDEXED", "snapshots, and lists and name searches without a cursor, walk the items in seq order; a list stops at a full page"),
        ("FROM \"tokens\" ORDER BY", "the token list is every token"),
        ("FROM \"tokens\" WHERE (\"user\" = ?)", "createTokenIfNone asks once, as a demo server starts"),
        ("FROM sqlite_sequence", "SQLite's table of AUTOINCREMENT counters: a row per such table"),
        ("FROM devices_seen WHERE pending = 1", "a partial index of the devices whose presence waits to be published"),
        ("UPDATE presence_leases SET expires_at = ? WHERE daemon = ?", "renews every lease of the daemon, which on SQLite holds them all"),
    ]

    @Test("every statement of the store's operations searches by key or index, but the listed walks")
    func noStatementScansATableItDoesNotMeanTo() async throws {
        let statements = Mutex<Set<String>>([])
        try await withTemporaryFolder { folder in
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            let database = try AppDatabase.open(
                path: folder.appendingPathComponent("stockroom.sqlite").path,
                eachConnection: { db in
                    db.trace(options: .statement) { event in
                        if case .statement(let statement) = event { statements.withLock { _ = $0.insert(statement.sql) } }
                    }
                })
            // The migrations' statements run once, on an empty file.
            statements.withLock { $0.removeAll() }
            try await EveryStoreOperation.run(database)
            // What only SQLite's store has: the log read past the hub's memory, the snapshot in one value.
            _ = try await database.readLoggedChanges(after: try await database.resolve(.oldest), filter: FeedFilter(user: "erin", topics: [.item, .navigation]), limit: 100)
            _ = try await database.snapshot(user: "erin")
            let planned = statements.withLock { $0 }.filter(Self.isPlannable).sorted()
            #expect(planned.count > 40, "the trace saw \(planned.count) statements")
            let scans = try await database.writer.read { db in
                try planned.compactMap { sql -> String? in
                    // Planned with no value bound (SQLite reads each parameter as NULL): a plan does not
                    // depend on the values bound.
                    let explain = try db.makeStatement(sql: "EXPLAIN QUERY PLAN " + sql)
                    explain.setUncheckedArguments(StatementArguments())
                    let details = try Row.fetchAll(explain).map { $0["detail"] as String }
                    let whole = details.filter(Self.readsATableWhole)
                    return whole.isEmpty ? nil : "\(sql)\n    \(whole.joined(separator: "; "))"
                }
            }
            EveryStoreOperation.expectOnlyMeant(scans, meant: Self.meantScans)
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
