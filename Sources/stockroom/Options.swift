import ArgumentParser
import Configuration
import Foundation
import Logging
import ServiceLifecycle
import StockroomServer
import StockroomStorage
import StockroomStore
import StockroomWire
import SystemPackage
import Synchronization

/// Where the settings come from: the providers, and the JSON types of the config file's values.
struct SettingSources {
    let reader: ConfigReader
    let fileTypes: ConfigFileTypes?
    /// The reader's providers, each alone, for errors that say where a value came from.
    let origins: [SettingOrigin]
}

/// Options every subcommand shares: where the database and the config file are.
struct StorageOptions: ParsableArguments {
    @Option(name: .customLong("db-path"), help: "The SQLite file (default ./data/stockroom.sqlite; env DB_PATH).")
    var dbPath: String?

    @Option(
        name: .customLong("db-url"),
        help: "A PostgreSQL database instead of the SQLite file: postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE (env DB_URL).")
    var dbURL: String?

    @Option(name: .customLong("config"), help: "A JSON config file (default Config/stockroom.json if present).")
    var config: String?

    /// Flags first, then the environment, then the config file; built-in defaults last.
    func reader(flags: [AbsoluteConfigKey: ConfigValue] = [:]) async throws -> SettingSources {
        var values = flags
        if let dbPath { values["db.path"] = .init(.string(dbPath), isSecret: false) }
        if let dbURL { values["db.url"] = .init(.string(dbURL), isSecret: true) }
        let file: FileProvider<JSONSnapshot>
        do {
            if let config {
                file = try await FileProvider<JSONSnapshot>(filePath: FilePath(config))
            } else {
                file = try await FileProvider<JSONSnapshot>(filePath: "Config/stockroom.json", allowMissing: true)
            }
        } catch {
            throw Startup.usageError("cannot read the config file \(config ?? "Config/stockroom.json"): \(Startup.describe(error))")
        }
        let path = config ?? "Config/stockroom.json"
        let contents = FileManager.default.contents(atPath: path)
        // A key given twice in one object: the provider keeps one value, and the file's reader may
        // have meant the other.
        if let contents, let repeated = JSONDuplicateKey.find(in: contents) {
            throw Startup.usageError("the config file \(path) gives \(repeated.field) twice; keep one")
        }
        let flagValues = InMemoryProvider(name: "flags", values: values)
        let environment = EnvironmentVariablesProvider()
        return SettingSources(
            reader: ConfigReader(providers: [flagValues, environment, file]),
            fileTypes: contents.flatMap { ConfigFileTypes(json: $0, file: path) },
            origins: [.flags(flagValues), .environment(environment), .file(file, path: path)])
    }

    /// Runs `body` with the configured storage, SQLite or PostgreSQL (migrated; its services
    /// running until `body` returns). With `existing`, a SQLite file that is not there is an error,
    /// not a new empty database.
    func withStorage<T>(settings: Settings? = nil, existing: Bool = false, _ body: (any Storage) async throws -> T) async throws -> T {
        let settings = if let settings { settings } else { try Startup.settings(try await reader()) }
        if existing { try Startup.requireDatabaseFile(settings) }
        let logger = Startup.logger
        let storage: any Storage
        let services: [any Service]
        do {
            (storage, services) = try await StorageOpening.open(settings, logger: logger)
        } catch let error as StartupError {
            throw Startup.failure(error.description)
        }
        let running = services.map { service in Task { try await service.run() } }
        defer { running.forEach { $0.cancel() } }
        let value = try await body(storage)
        for task in running {
            task.cancel()
            _ = await task.result
        }
        return value
    }

    /// Opens and migrates the configured SQLite database (creating the file if missing, unless
    /// `existing`: then its absence is an error).
    func openDatabase(existing: Bool = false) async throws -> AppDatabase {
        let settings = try Startup.settings(try await reader())
        if existing { try Startup.requireDatabaseFile(settings) }
        return try await openDatabase(settings: settings)
    }

    /// Opens and migrates the database `settings` name (creating the file if missing).
    func openDatabase(settings: Settings) async throws -> AppDatabase {
        if let url = settings.databaseURL {
            throw Startup.usageError(
                "this command works on the SQLite file, and DB_URL (--db-url) names PostgreSQL (\(url)); "
                    + "on PostgreSQL use pg_dump and pg_restore (docs/production.md, \"On PostgreSQL: several daemons\")")
        }
        let logger = Startup.logger
        do {
            let (database, lock, _) = try StorageOpening.openSQLite(settings, logger: logger)
            Startup.heldLocks.withLock { $0.append(lock) }
            return database
        } catch {
            throw Startup.failure(StartupError.database(path: settings.databasePath, underlying: error).description)
        }
    }
}

/// How a command stops when it cannot start: one line on stderr saying what failed and what to do.
enum Startup {
    /// The database locks the command holds until it exits (`DatabaseFileLock`).
    static let heldLocks = Mutex<[DatabaseFileLock]>([])

    /// The logger of the commands but `serve`: warnings and errors only, so their output stays their answer.
    static var logger: Logger {
        var logger = Logger(label: "stockroom")
        logger.logLevel = .warning
        return logger
    }

    /// Reads the settings, or stops with exit status 64 (EX_USAGE) naming the bad setting.
    static func settings(_ sources: SettingSources) throws -> Settings {
        do {
            return try Settings(reader: sources.reader, fileTypes: sources.fileTypes, origins: sources.origins)
        } catch let error as SettingsError {
            throw usageError(error.description)
        }
    }

    /// Stops with exit status 1 when the settings name a SQLite file that is not there, for a
    /// command that reads what a database holds (a backup of a new empty file, or the tokens of
    /// one, would say nothing of the database the operator meant).
    static func requireDatabaseFile(_ settings: Settings) throws {
        // A folder passes here: opening it is refused with the reason (`AppDatabase.checkDatabasePath`).
        guard settings.databaseURL == nil, !FileManager.default.fileExists(atPath: settings.databasePath) else { return }
        let absolute = URL(fileURLWithPath: settings.databasePath).standardizedFileURL.path
        throw failure(
            "no database at \(absolute): name the file with --db-path, DB_PATH or db.path (the default, "
                + "\(Settings.defaultDatabasePath), is relative to the working directory)")
    }

    /// An error as a line for an operator: Foundation's reason rather than its error's dump.
    static func describe(_ error: any Error) -> String {
        let error = error as NSError
        if let detail = error.userInfo[NSDebugDescriptionErrorKey] as? String {
            return "\(error.localizedDescription) (\(detail))"
        }
        return error.domain == NSCocoaErrorDomain ? error.localizedDescription : "\(error)"
    }

    /// Prints `message` and returns exit status 64 (EX_USAGE), for a bad setting or flag.
    static func usageError(_ message: String) -> ExitCode {
        printError(message)
        return ExitCode(64)
    }

    /// Prints `message` and returns exit status 1, for what stops a command once its settings are good.
    static func failure(_ message: String) -> ExitCode {
        printError(message)
        return ExitCode(1)
    }

    /// Prints `stockroom: message` on stderr.
    static func printError(_ message: String) {
        FileHandle.standardError.write(Data("stockroom: \(message)\n".utf8))
    }
}
