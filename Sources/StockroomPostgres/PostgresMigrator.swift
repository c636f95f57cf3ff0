import Logging
import PostgresNIO
import StockroomMigrations

/// Applies `Migrations/postgres/*.sql` in name order, once, even when several daemons start at
/// the same moment: all in one transaction that first takes a transaction-scoped advisory lock,
/// so a second migrator waits for the first and then finds everything applied. PostgreSQL's DDL is
/// transactional: a migration that fails leaves nothing behind.
enum PostgresMigrator {
    /// The advisory lock's key: any fixed number no other application on the database uses.
    static let lockKey: Int64 = 7_126_500_028

    /// Migrates the database `connection` is on; returns the identifiers it applied now.
    /// Refuses a database that holds a migration this stockroom does not know (a newer one wrote it).
    @discardableResult
    static func migrate(_ connection: PostgresConnection, logger: Logger) async throws -> [String] {
        let migrations = try MigrationFiles.postgres()
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
            let known = Set(migrations.map(\.identifier))
            if let unknown = applied.subtracting(known).sorted().first {
                throw PostgresStoreError.schema(
                    "the database has migration \(unknown), which this stockroom does not know: a newer stockroom migrated it")
            }
            var done: [String] = []
            for migration in migrations where !applied.contains(migration.identifier) {
                for statement in SQLStatements.split(migration.sql) {
                    try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger)
                }
                try await connection.query("INSERT INTO schema_migrations (identifier) VALUES (\(migration.identifier))", logger: logger)
                done.append(migration.identifier)
            }
            return done
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
