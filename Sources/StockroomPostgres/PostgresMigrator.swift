import Logging
import PostgresNIO
import StockroomMigrations
import StockroomWire

/// Applies `Migrations/postgres/*.sql` in name order, once, even when several daemons start at
/// the same moment: all in one transaction that first takes a transaction-scoped advisory lock,
/// so a second migrator waits for the first and then finds everything applied. PostgreSQL's DDL is
/// transactional: a migration that fails leaves nothing behind.
enum PostgresMigrator {
    /// The advisory lock's key: any fixed number no other application on the database uses.
    static let lockKey: Int64 = 7_126_500_028

    /// Migrates the database `connection` is on (through `last`, for a test of a later migration);
    /// returns the identifiers it applied now.
    /// Refuses a database that holds a migration this stockroom does not know (a newer one wrote it).
    @discardableResult
    static func migrate(_ connection: PostgresConnection, upTo last: String? = nil, logger: Logger) async throws -> [String] {
        let all = try MigrationFiles.postgres()
        let migrations = all.filter { last == nil || $0.identifier <= last! }
        return try await PostgresStore.transaction(on: connection, logger: logger) { connection in
            try await connection.query("SELECT pg_advisory_xact_lock(\(lockKey))", logger: logger)
            try await connection.query(
                """
                CREATE TABLE IF NOT EXISTS schema_migrations (
                    identifier TEXT COLLATE "C" PRIMARY KEY,
                    applied_at TIMESTAMPTZ NOT NULL DEFAULT now()
                )
                """, logger: logger)
            var applied: Set<String> = []
            for try await identifier in try await connection.query("SELECT identifier FROM schema_migrations", logger: logger)
                .decode(String.self)
            {
                applied.insert(identifier)
            }
            let known = Set(all.map(\.identifier))
            if let unknown = applied.subtracting(known).sorted().first {
                throw PostgresStoreError.schema(
                    "the database has migration \(unknown), which this stockroom does not know: a newer stockroom migrated it")
            }
            var done: [String] = []
            for migration in migrations where !applied.contains(migration.identifier) {
                for statement in SQLStatements.split(migration.sql) {
                    try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger)
                }
                if migration.identifier == "0002_navigation_values" {
                    try await rewriteNavigationValues(connection, logger: logger)
                }
                try await connection.query("INSERT INTO schema_migrations (identifier) VALUES (\(migration.identifier))", logger: logger)
                done.append(migration.identifier)
            }
            return done
        }
    }

    /// Every retained navigation value, rewritten into change-value form 2 (`NavigationValueUpgrade`).
    static func rewriteNavigationValues(_ connection: PostgresConnection, logger: Logger) async throws {
        var stored: [(Int64, String)] = []
        for try await (seq, value) in try await connection.query(
            "SELECT seq, value FROM changes WHERE entity = 'navigation' AND value IS NOT NULL", logger: logger
        ).decode((Int64, String).self) {
            stored.append((seq, value))
        }
        var names: [String: String] = [:]
        for try await (id, name) in try await connection.query(
            "SELECT id, name FROM items WHERE deleted_at IS NULL AND id IN (SELECT DISTINCT (value::jsonb #>> '{destination,deleteAlert,itemID}') FROM changes WHERE entity = 'navigation' AND value IS NOT NULL)",
            logger: logger
        ).decode((String, String).self) {
            names[id] = name
        }
        for (seq, value) in stored {
            let rewritten = try NavigationValueUpgrade.rewrite(value) { names[$0.description] }
            try await connection.query("UPDATE changes SET value = \(rewritten) WHERE seq = \(seq)", logger: logger)
        }
    }

    /// The identifiers applied to the database, in order.
    static func applied(_ connection: PostgresConnection, logger: Logger) async throws -> [String] {
        var identifiers: [String] = []
        for try await identifier in try await connection.query(
            "SELECT identifier FROM schema_migrations ORDER BY identifier", logger: logger
        ).decode(String.self) {
            identifiers.append(identifier)
        }
        return identifiers
    }
}
