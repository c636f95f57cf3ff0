import ArgumentParser
import StockroomPostgres

/// `stockroom migrate`: create the database if missing and apply every migration.
struct Migrate: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Create the database if missing and apply every migration.")

    @OptionGroup var storage: StorageOptions

    func run() async throws {
        let settings = try Startup.settings(try await storage.reader())
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
}
