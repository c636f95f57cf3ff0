import ArgumentParser
import Configuration
import Logging
import StockroomServer
import StockroomStore
import SystemPackage

/// Options every subcommand shares: where the database and the config file are.
struct StorageOptions: ParsableArguments {
    @Option(name: .customLong("db-path"), help: "The SQLite file (default ./data/stockroom.sqlite; env DB_PATH).")
    var dbPath: String?

    @Option(name: .customLong("config"), help: "A JSON config file (default Config/stockroom.json if present).")
    var config: String?

    /// Flags first, then the environment, then the config file; built-in defaults last.
    func reader(flags: [AbsoluteConfigKey: ConfigValue] = [:]) async throws -> ConfigReader {
        var values = flags
        if let dbPath { values["db.path"] = .init(.string(dbPath), isSecret: false) }
        let file: FileProvider<JSONSnapshot>
        if let config {
            file = try await FileProvider<JSONSnapshot>(filePath: FilePath(config))
        } else {
            file = try await FileProvider<JSONSnapshot>(filePath: "Config/stockroom.json", allowMissing: true)
        }
        return ConfigReader(providers: [
            InMemoryProvider(name: "flags", values: values),
            EnvironmentVariablesProvider(),
            file,
        ])
    }

    /// Opens and migrates the configured database (creating the file if missing).
    func openDatabase() async throws -> AppDatabase {
        let settings = try Settings(reader: try await reader())
        var logger = Logger(label: "stockroom")
        logger.logLevel = .warning
        return try settings.openDatabase(logger: logger)
    }
}
