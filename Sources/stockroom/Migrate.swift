import ArgumentParser

/// `stockroom migrate`: create the database if missing and apply every migration.
struct Migrate: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Create the database if missing and apply every migration.")

    @OptionGroup var storage: StorageOptions

    func run() async throws {
        let database = try await storage.openDatabase()
        let applied = try database.appliedMigrations()
        print("Database is at migration \(applied.last ?? "none") (\(applied.count) applied).")
    }
}
