import ArgumentParser
import Foundation
import Logging
import StockroomPostgres
import StockroomServer
import StockroomStorage

/// `stockroom migrate`: create the database if missing and apply every migration; with
/// `--from-sqlite`, copy a SQLite database into the (empty) PostgreSQL database.
struct Migrate: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Create the database if missing and apply every migration.",
        discussion: """
            With --from-sqlite FILE and --db-url URL: copy the SQLite database (a stopped server's file, \\
            or a backup) into the PostgreSQL database, which must be empty, in one transaction: items, \\
            tokens, navigation, idempotency records and the change log, with their ids, versions and seqs.
            """)

    @OptionGroup var storage: StorageOptions

    @Option(
        name: .customLong("from-sqlite"),
        help: "A SQLite database to copy into the PostgreSQL database of --db-url (migrated to this version first).")
    var fromSQLite: String?

    @Flag(
        name: .customLong("new-epoch"),
        help: "With --from-sqlite: give the copy a new epoch (every client takes a new snapshot) instead of the SQLite one (cursors stay valid).")
    var newEpoch = false

    func run() async throws {
        let settings = try Startup.settings(try await storage.reader())
        if let source = fromSQLite {
            try await copy(from: source, settings: settings)
            return
        }
        if newEpoch { throw Startup.usageError("--new-epoch goes with --from-sqlite") }
        let applied: [String]
        if settings.databaseURL != nil {
            applied = try await storage.withStorage(settings: settings) { database in
                try await (database as! PostgresStore).appliedMigrations()
            }
        } else {
            applied = try await storage.openDatabase(settings: settings).appliedMigrations()
        }
        print("Database is at migration \(applied.last ?? "none") (\(applied.count) applied).")
    }

    private func copy(from source: String, settings: Settings) async throws {
        guard let url = settings.databaseURL else {
            throw Startup.usageError("--from-sqlite copies into PostgreSQL: name the database with --db-url or DB_URL")
        }
        guard FileManager.default.fileExists(atPath: source) else { throw Startup.usageError("--from-sqlite: no file at \(source)") }
        let logger = Startup.logger
        // Opened as every command opens its SQLite file: its lock held shared, as a server holds
        // it, until the command exits, so a `restore` of the source is refused while the copy runs
        // and the copy does not start while one runs.
        var sourceSettings = settings
        sourceSettings.databaseURL = nil
        sourceSettings.databasePath = source
        let database = try await storage.openDatabase(settings: sourceSettings)
        do {
            let summary = try await PostgresStore.importCopy(from: try database.copySource(), into: url, newEpoch: newEpoch, logger: logger)
            let rows = CopiedTable.allCases.map { "\(summary.rows[$0] ?? 0) \($0.rawValue)" }.joined(separator: ", ")
            print("Copied \(source) into \(url): \(rows); log head \(summary.head), epoch \(summary.epoch)\(newEpoch ? " (new)" : " (kept)").")
        } catch let error as PostgresStoreError {
            throw Startup.failure("\(url): \(error.description); nothing was copied")
        } catch {
            throw Startup.failure("\(url): \(PostgresStore.describe(error)); nothing was copied")
        }
    }
}
