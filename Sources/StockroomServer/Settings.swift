import Configuration
import Foundation
import Logging
import ServiceLifecycle
import StockroomPostgres
import StockroomStorage
import StockroomStore

/// Every setting of the daemon, read from CLI flags, then the environment, then the config file, then defaults.
public struct Settings: Sendable {
    /// Address to listen on (`http.host`, `HTTP_HOST`, `--http-host`).
    public var host: String
    /// Port to listen on; 0 picks a free one (`http.port`, `HTTP_PORT`, `--http-port`).
    public var port: Int
    /// The SQLite file (`db.path`, `DB_PATH`, `--db-path`), used when `databaseURL` is not set.
    public var databasePath: String
    /// A PostgreSQL database instead of the SQLite file (`db.url`, `DB_URL`, `--db-url`): a
    /// `postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE[?sslmode=disable|prefer|require|verify-full]` URL.
    /// Several daemons may share it.
    public var databaseURL: PostgresURL?
    /// The most connections the daemon opens to PostgreSQL, its listener's apart (`db.maxConnections`).
    public var databaseMaxConnections: Int
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
    /// Connection timeouts and caps (`http.*`).
    public var connections: ConnectionSettings
    /// How often a server reads the token generation, to learn of revocations by other processes
    /// (`auth.revocationCheckMilliseconds`); `stockroom token revoke` waits ten of these.
    public var revocationCheck: Duration
    /// Browser origins allowed to call the API (`http.corsAllowedOrigins`, `HTTP_CORS_ALLOWED_ORIGINS`,
    /// comma separated); empty, the default, turns CORS off.
    public var corsAllowedOrigins: [String]

    /// The built-in default database path.
    public static let defaultDatabasePath = "./data/stockroom.sqlite"

    /// Reads and checks every setting; throws a `SettingsError` naming the bad one. A value of the
    /// wrong type is an error too, never silently replaced by the default.
    public init(reader: ConfigReader) throws {
        let read = SettingReader(reader)
        host = try read.string("http.host", default: "127.0.0.1", expected: "a host name or IP address") { !$0.isEmpty }
        port = try read.int("http.port", default: 8080, in: 0...65535)
        databasePath = try read.string("db.path", default: Self.defaultDatabasePath, expected: "a file path") { !$0.isEmpty }
        databaseURL = try Self.databaseURL(read)
        databaseMaxConnections = try read.int("db.maxConnections", default: 20, in: 1...1000)
        synchronous = try read.choice("db.synchronous", default: .full, among: AppDatabase.Synchronous.allCases.map { ($0.rawValue.lowercased(), $0) })
        busyTimeoutSeconds = try read.int("db.busyTimeoutSeconds", default: 5, in: 0...3600)
        logLevel = try read.choice("log.level", default: .info, among: Logger.Level.allCases.map { ($0.rawValue, $0) })
        idempotencyRetentionHours = try read.int("idempotency.retentionHours", default: 24, in: 24...87_600)
        demo = try read.bool("demo", default: false)
        feed = try FeedSettings(read)
        limits = try LimitSettings(read)
        metricsAccess = try read.choice("metrics.access", default: .public, among: MetricsAccess.allCases.map { ($0.rawValue, $0) })
        connections = try ConnectionSettings(read)
        revocationCheck = .milliseconds(try read.int("auth.revocationCheckMilliseconds", default: 50, in: 10...60_000))
        corsAllowedOrigins = try Self.origins(read)
    }

    /// A list in the config file, one comma-separated string from the environment. Each origin is
    /// checked: a browser sends `scheme://host[:port]` exactly, so anything else would never match.
    static func origins(_ read: SettingReader) throws -> [String] {
        let key = "http.corsAllowedOrigins"
        let expected = "origins like https://app.example.com or http://127.0.0.1:3000, comma separated"
        let values: [String]
        if let text = read.reader.string(forKey: ConfigKey(key)) {
            values = text.split(separator: ",").map(String.init)
        } else if let list = read.reader.stringArray(forKey: ConfigKey(key)) {
            values = list
        } else if let given = read.given(key) {
            throw SettingsError(key: key, value: given, expected: expected)
        } else {
            values = []
        }
        return try values.map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }.map { origin in
            guard let url = URLComponents(string: origin), let scheme = url.scheme, ["http", "https"].contains(scheme),
                let host = url.host, !host.isEmpty, url.path.isEmpty, url.query == nil, url.fragment == nil, url.user == nil
            else {
                throw SettingsError(key: key, value: "\"\(origin)\"", expected: expected)
            }
            return origin
        }
    }

    static func databaseURL(_ read: SettingReader) throws -> PostgresURL? {
        let key = "db.url"
        guard let text = read.reader.string(forKey: ConfigKey(key)) else {
            if let given = read.given(key) { throw SettingsError(key: key, value: given, expected: "a postgres:// URL") }
            return nil
        }
        guard !text.isEmpty else { return nil }
        do {
            return try PostgresURL(text)
        } catch {
            throw SettingsError(key: key, value: PostgresURL.redacted(text), expected: "a postgres:// URL (\(error))")
        }
    }

    /// Where the data is, for the startup log and errors: the SQLite file or the PostgreSQL URL
    /// (without its password).
    public var databaseDescription: String {
        databaseURL.map { "\($0)" } ?? databasePath
    }

    /// Opens the configured storage: the PostgreSQL database when `databaseURL` is set (migrated
    /// once whatever other daemons do; its pool, listener and poll are `services`, which must run
    /// before it is used), else the SQLite file (created and migrated if needed).
    public func openStorage(logger: Logger, writesInFlight: WritesInFlight = WritesInFlight()) async throws
        -> (storage: any Storage, services: [any Service])
    {
        if let databaseURL {
            do {
                let store = try await PostgresStore.open(
                    url: databaseURL, limits: StoreLimits(clientsPerUser: limits.clientsPerUser),
                    maximumConnections: databaseMaxConnections, logger: logger)
                return (store, [store])
            } catch {
                throw StartupError.postgres(url: "\(databaseURL)", underlying: error)
            }
        }
        do {
            return (try openDatabase(logger: logger, writesInFlight: writesInFlight), [])
        } catch {
            throw StartupError.database(path: databasePath, underlying: error)
        }
    }

    /// Opens the configured database, creating and migrating it if needed. `writesInFlight` is the
    /// server's count of its write requests, which the store reads as a hint.
    public func openDatabase(logger: Logger, writesInFlight: WritesInFlight = WritesInFlight()) throws -> AppDatabase {
        var database = try AppDatabase.open(
            path: databasePath, synchronous: synchronous, busyTimeout: .seconds(busyTimeoutSeconds),
            writesInFlight: writesInFlight, logger: logger)
        database.limits = StoreLimits(clientsPerUser: limits.clientsPerUser)
        return database
    }
}

/// A setting with a value that cannot be used.
public struct SettingsError: Error, CustomStringConvertible {
    /// What is wrong: the setting, its environment variable, the value and what is expected.
    public var description: String
    init(_ description: String) { self.description = description }

    init(key: String, value: String, expected: String) {
        self.init("invalid setting \(key) (environment variable \(SettingReader.environmentName(key))): \(value); expected \(expected)")
    }
}

/// Reads settings strictly: a missing value takes the default, a present value must parse and lie in range.
struct SettingReader {
    let reader: ConfigReader

    init(_ reader: ConfigReader) { self.reader = reader }

    /// The environment variable swift-configuration reads `key` from: `db.busyTimeoutSeconds` -> `DB_BUSY_TIMEOUT_SECONDS`.
    static func environmentName(_ key: String) -> String {
        key.split(separator: ".").map { part in
            var word = ""
            for character in part {
                if character.isUppercase, !word.isEmpty { word += "_" }
                word += character.uppercased()
            }
            return word
        }.joined(separator: "_")
    }

    /// The value as given, for an error message; nil when no provider has one.
    func given(_ key: String) -> String? {
        let key = ConfigKey(key)
        if let string = reader.string(forKey: key) { return "\"\(string)\"" }
        if let int = reader.int(forKey: key) { return "\(int)" }
        if let double = reader.double(forKey: key) { return "\(double)" }
        if let bool = reader.bool(forKey: key) { return "\(bool)" }
        if reader.stringArray(forKey: key) != nil { return "a list" }
        return nil
    }

    func int(_ key: String, default value: Int, in range: ClosedRange<Int>) throws -> Int {
        let expected = "an integer from \(range.lowerBound) to \(range.upperBound)"
        guard let number = reader.int(forKey: ConfigKey(key)) else {
            if let given = given(key) { throw SettingsError(key: key, value: given, expected: expected) }
            return value
        }
        guard range.contains(number) else { throw SettingsError(key: key, value: "\(number)", expected: expected) }
        return number
    }

    func bool(_ key: String, default value: Bool) throws -> Bool {
        if let flag = reader.bool(forKey: ConfigKey(key)) { return flag }
        if let given = given(key) { throw SettingsError(key: key, value: given, expected: "true or false") }
        return value
    }

    func string(_ key: String, default value: String, expected: String, isValid: (String) -> Bool) throws -> String {
        guard let text = reader.string(forKey: ConfigKey(key)) else {
            if let given = given(key) { throw SettingsError(key: key, value: given, expected: expected) }
            return value
        }
        guard isValid(text) else { throw SettingsError(key: key, value: "\"\(text)\"", expected: expected) }
        return text
    }

    /// One of `choices`, by name, case-insensitively.
    func choice<Value>(_ key: String, default value: Value, among choices: [(String, Value)]) throws -> Value {
        let expected = "one of " + choices.map(\.0).joined(separator: ", ")
        guard let text = reader.string(forKey: ConfigKey(key)) else {
            if let given = given(key) { throw SettingsError(key: key, value: given, expected: expected) }
            return value
        }
        guard let match = choices.first(where: { $0.0 == text.lowercased() }) else {
            throw SettingsError(key: key, value: "\"\(text)\"", expected: expected)
        }
        return match.1
    }
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
    /// At most this many feed subscribers (streams, WebSockets, long-polls) at once (`feed.maxSubscribers`, default 10,000).
    public var maxSubscribers: Int
    /// At most this many per token (`feed.maxSubscribersPerToken`, default 256).
    public var maxSubscribersPerToken: Int

    init(_ read: SettingReader) throws {
        heartbeat = .seconds(try read.int("feed.heartbeatSeconds", default: 15, in: 1...3600))
        writeTimeout = .seconds(try read.int("feed.writeTimeoutSeconds", default: 30, in: 1...3600))
        retentionMaxAge = .seconds(try read.int("feed.retention.maxAgeHours", default: 168, in: 1...87_600) * 3600)
        retentionMaxEntries = try read.int("feed.retention.maxEntries", default: 1_000_000, in: 1...Int(Int32.max))
        trimInterval = .seconds(try read.int("feed.retention.intervalSeconds", default: 60, in: 1...86_400))
        maxSubscribers = try read.int("feed.maxSubscribers", default: 10_000, in: 1...1_000_000)
        maxSubscribersPerToken = try read.int("feed.maxSubscribersPerToken", default: 256, in: 1...1_000_000)
    }
}

/// What one token or one user may cost the server (see SECURITY.md).
public struct LimitSettings: Sendable {
    /// The most clients (devices) one user may have (`limits.clientsPerUser`, default 1,000).
    public var clientsPerUser: Int
    /// Writes and commands one token may send per second, sustained (`limits.writesPerSecond`;
    /// 0, the default, turns the limit off: one trusted client may use the whole writer, as the
    /// benchmarks do). Over it: `429 tooManyRequests` with `Retry-After`. SECURITY.md suggests a value.
    public var writesPerSecond: Int
    /// How many writes a token may send at once above the sustained rate (`limits.writeBurst`, default 100).
    public var writeBurst: Int
    /// Devices neither written nor seen for this many days are removed with their drafts, each
    /// removal a `navigation` `delete` change (`limits.deviceRetentionDays`, default 90; 0 keeps them for ever).
    public var deviceRetentionDays: Int

    init(_ read: SettingReader) throws {
        clientsPerUser = try read.int("limits.clientsPerUser", default: 1000, in: 1...1_000_000)
        writesPerSecond = try read.int("limits.writesPerSecond", default: 0, in: 0...1_000_000)
        writeBurst = try read.int("limits.writeBurst", default: 100, in: 1...1_000_000)
        deviceRetentionDays = try read.int("limits.deviceRetentionDays", default: 90, in: 0...36_500)
    }
}

/// Who may read `/metrics`.
public enum MetricsAccess: String, Sendable, CaseIterable {
    /// Anyone who can reach the port (keep the port private, or put it behind a proxy).
    case `public`
    /// Requests with an admin bearer token.
    case admin
}

/// How long connections may idle and how many there may be.
public struct ConnectionSettings: Sendable {
    /// A connection with no request in progress is closed after this; so is a request whose headers
    /// or body stall this long (`http.idleTimeoutSeconds`, default 60). Streams are not idle.
    public var idleTimeout: Duration
    /// A new connection must have sent its first request's headers within this
    /// (`http.headerTimeoutSeconds`, default 10).
    public var headerTimeout: Duration
    /// At most this many open connections; more are answered `503` with `Retry-After` and closed
    /// (`http.maxConnections`; 0, the default, means the open-file limit minus 128).
    public var maxConnectionsSetting: Int
    /// The connection cap in force, once `resolve` has read the open-file limit.
    public var maxConnections: Int

    init(_ read: SettingReader) throws {
        idleTimeout = .seconds(try read.int("http.idleTimeoutSeconds", default: 60, in: 1...3600))
        headerTimeout = .seconds(try read.int("http.headerTimeoutSeconds", default: 10, in: 1...3600))
        maxConnectionsSetting = try read.int("http.maxConnections", default: 0, in: 0...1_000_000)
        maxConnections = maxConnectionsSetting
    }

    /// The cap for an open-file limit of `fileLimit`: the setting, or the limit minus a reserve.
    mutating func resolve(fileLimit: Int) {
        maxConnections = maxConnectionsSetting > 0 ? maxConnectionsSetting : max(16, fileLimit - FileDescriptorLimit.reserve)
    }
}
