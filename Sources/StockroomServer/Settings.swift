import Configuration
import Foundation
import Logging
import StockroomStore

/// Every setting of the daemon, read from CLI flags, then the environment, then the config file, then defaults.
public struct Settings: Sendable {
    /// Address to listen on (`http.host`, `HTTP_HOST`, `--http-host`).
    public var host: String
    /// Port to listen on; 0 picks a free one (`http.port`, `HTTP_PORT`, `--http-port`).
    public var port: Int
    /// The SQLite file (`db.path`, `DB_PATH`, `--db-path`).
    public var databasePath: String
    /// SQLite's `synchronous` level (`db.synchronous`, `DB_SYNCHRONOUS`): `full` or `normal`.
    public var synchronous: AppDatabase.Synchronous
    /// How long a write waits for the lock before answering 503 (`db.busyTimeoutSeconds`).
    public var busyTimeoutSeconds: Int
    /// Log level (`log.level`, `LOG_LEVEL`).
    public var logLevel: Logger.Level
    /// How long idempotency records are kept, at least 24 (`idempotency.retentionHours`).
    public var idempotencyRetentionHours: Int
    /// Seed the demo items into an empty database (`demo`, `--demo`).
    public var demo: Bool
    /// Change-feed settings (`feed.*`).
    public var feed: FeedSettings
    /// What one token or user may cost (`limits.*`).
    public var limits: LimitSettings
    /// Who may read `/metrics` (`metrics.access`, `METRICS_ACCESS`): `public` (the default, as the
    /// contract lists it among the open routes) or `admin` (an admin bearer token).
    public var metricsAccess: MetricsAccess

    /// The built-in default database path.
    public static let defaultDatabasePath = "./data/stockroom.sqlite"

    /// Reads and checks every setting; throws a `SettingsError` naming the bad one.
    public init(reader: ConfigReader) throws {
        host = reader.string(forKey: "http.host", default: "127.0.0.1")
        port = reader.int(forKey: "http.port", default: 8080)
        guard (0...65535).contains(port) else { throw SettingsError("http.port must be 0-65535, got \(port)") }
        databasePath = reader.string(forKey: "db.path", default: Self.defaultDatabasePath)
        guard !databasePath.isEmpty else { throw SettingsError("db.path must not be empty") }
        let sync = reader.string(forKey: "db.synchronous", default: "full")
        guard let level = AppDatabase.Synchronous(rawValue: sync.uppercased()) else {
            throw SettingsError("db.synchronous must be full or normal, got \(sync)")
        }
        synchronous = level
        busyTimeoutSeconds = reader.int(forKey: "db.busyTimeoutSeconds", default: 5)
        guard busyTimeoutSeconds >= 0 else { throw SettingsError("db.busyTimeoutSeconds must be >= 0") }
        let levelName = reader.string(forKey: "log.level", default: "info")
        guard let logLevel = Logger.Level(rawValue: levelName.lowercased()) else {
            throw SettingsError("log.level must be one of \(Logger.Level.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        self.logLevel = logLevel
        idempotencyRetentionHours = reader.int(forKey: "idempotency.retentionHours", default: 24)
        guard idempotencyRetentionHours >= 24 else { throw SettingsError("idempotency.retentionHours must be at least 24") }
        demo = reader.bool(forKey: "demo", default: false)
        feed = try FeedSettings(reader: reader)
        limits = try LimitSettings(reader: reader)
        let access = reader.string(forKey: "metrics.access", default: "public")
        guard let metricsAccess = MetricsAccess(rawValue: access.lowercased()) else {
            throw SettingsError("metrics.access must be public or admin, got \(access)")
        }
        self.metricsAccess = metricsAccess
    }

    /// Opens the configured database, creating and migrating it if needed.
    public func openDatabase(logger: Logger) throws -> AppDatabase {
        var database = try AppDatabase.open(
            path: databasePath, synchronous: synchronous, busyTimeout: .seconds(busyTimeoutSeconds), logger: logger)
        database.limits = StoreLimits(clientsPerUser: limits.clientsPerUser)
        return database
    }
}

/// A setting with a value that cannot be used.
public struct SettingsError: Error, CustomStringConvertible {
    /// What is wrong.
    public var description: String
    init(_ description: String) { self.description = description }
}

/// How the change feed streams and how long its log is kept.
public struct FeedSettings: Sendable {
    /// Idle streams get a heartbeat this often (`feed.heartbeatSeconds`, default 15).
    public var heartbeat: Duration
    /// A subscriber whose socket takes longer than this to accept one write is disconnected; it
    /// resumes from its cursor (`feed.writeTimeoutSeconds`, default 30).
    public var writeTimeout: Duration
    /// Entries older than this are trimmed (`feed.retention.maxAgeHours`, default 168 = 7 days).
    public var retentionMaxAge: Duration
    /// At most this many entries are kept (`feed.retention.maxEntries`, default 1,000,000).
    public var retentionMaxEntries: Int
    /// How often trimming runs (`feed.retention.intervalSeconds`, default 60).
    public var trimInterval: Duration

    init(reader: ConfigReader) throws {
        func seconds(_ key: String, default value: Int, range: ClosedRange<Int>) throws -> Int {
            let number = reader.int(forKey: ConfigKey(key), default: value)
            guard range.contains(number) else {
                throw SettingsError("\(key) must be \(range.lowerBound)-\(range.upperBound), got \(number)")
            }
            return number
        }
        heartbeat = .seconds(try seconds("feed.heartbeatSeconds", default: 15, range: 1...3600))
        writeTimeout = .seconds(try seconds("feed.writeTimeoutSeconds", default: 30, range: 1...3600))
        retentionMaxAge = .seconds(try seconds("feed.retention.maxAgeHours", default: 168, range: 1...87_600) * 3600)
        retentionMaxEntries = try seconds("feed.retention.maxEntries", default: 1_000_000, range: 1...Int(Int32.max))
        trimInterval = .seconds(try seconds("feed.retention.intervalSeconds", default: 60, range: 1...86_400))
    }
}

/// What one token or one user may cost the server (see SECURITY.md).
public struct LimitSettings: Sendable {
    /// The most clients (devices) one user may have (`limits.clientsPerUser`, default 100).
    public var clientsPerUser: Int
    /// Writes and commands one token may send per second, sustained (`limits.writesPerSecond`;
    /// 0, the default, turns the limit off: one trusted client may use the whole writer, as the
    /// benchmarks do). Over it: `429 tooManyRequests` with `Retry-After`. SECURITY.md suggests a value.
    public var writesPerSecond: Int
    /// How many writes a token may send at once above the sustained rate (`limits.writeBurst`, default 100).
    public var writeBurst: Int

    init(reader: ConfigReader) throws {
        func number(_ key: String, default value: Int, range: ClosedRange<Int>) throws -> Int {
            let number = reader.int(forKey: ConfigKey(key), default: value)
            guard range.contains(number) else {
                throw SettingsError("\(key) must be \(range.lowerBound)-\(range.upperBound), got \(number)")
            }
            return number
        }
        clientsPerUser = try number("limits.clientsPerUser", default: 100, range: 1...1_000_000)
        writesPerSecond = try number("limits.writesPerSecond", default: 0, range: 0...1_000_000)
        writeBurst = try number("limits.writeBurst", default: 100, range: 1...1_000_000)
    }
}

/// Who may read `/metrics`.
public enum MetricsAccess: String, Sendable, CaseIterable {
    /// Anyone who can reach the port (keep the port private, or put it behind a proxy).
    case `public`
    /// Requests with an admin bearer token.
    case admin
}
