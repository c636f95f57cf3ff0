import Configuration
import Foundation
import Logging
import StockroomPostgres
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
    /// wrong type is an error too, never silently replaced by the default; `fileTypes`, the JSON
    /// types of the config file's values, tells a file's `true` from its `1`; with them, a key of
    /// the file that is no setting is an error as well. `origins`, the reader's providers each
    /// alone and in its order, let an error name where the refused value came from (a flag, an
    /// environment variable, the config file); without them it names the environment variable.
    public init(reader: ConfigReader, fileTypes: ConfigFileTypes? = nil, origins: [SettingOrigin] = []) throws {
        let read = SettingReader(reader, fileTypes: fileTypes, origins: origins)
        host = try read.string("http.host", default: "127.0.0.1", expected: "a host name or IP address") { host in
            // A name's letters, digits, dots and hyphens, an IPv4 address, or an IPv6 address (colons,
            // and a zone after %): anything else could only fail when the server binds.
            !host.isEmpty && host.utf8.allSatisfy { byte in
                (byte >= 0x30 && byte <= 0x39) || (byte | 0x20 >= 0x61 && byte | 0x20 <= 0x7A) || "-._:%".utf8.contains(byte)
            }
        }
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
        try read.refuseUnknownFileKeys()
    }

    /// A list in the config file, one comma-separated string from the environment. Each origin is
    /// checked: a browser sends `scheme://host[:port]` exactly, so anything else would never match.
    static func origins(_ read: SettingReader) throws -> [String] {
        let key = "http.corsAllowedOrigins"
        read.note(key)
        let expected = "origins like https://app.example.com or http://127.0.0.1:3000, comma separated"
        try read.checkFileType(key, accepted: [.array, .string], expected: "a list of " + expected.replacingOccurrences(of: ", comma separated", with: ""))
        let values: [String]
        if let text = read.reader.string(forKey: ConfigKey(key)) {
            values = text.split(separator: ",").map(String.init)
        } else if let list = read.reader.stringArray(forKey: ConfigKey(key)) {
            values = list
        } else if let given = read.given(key) {
            throw read.invalid(key, value: given, expected: expected)
        } else {
            values = []
        }
        return try values.map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }.map { origin in
            guard let url = URLComponents(string: origin), let scheme = url.scheme, ["http", "https"].contains(scheme),
                let host = url.host, !host.isEmpty, url.path.isEmpty, url.query == nil, url.fragment == nil, url.user == nil
            else {
                throw read.invalid(key, value: "\"\(origin)\"", expected: expected)
            }
            return origin
        }
    }

    static func databaseURL(_ read: SettingReader) throws -> PostgresURL? {
        let key = "db.url"
        read.note(key)
        guard let text = read.reader.string(forKey: ConfigKey(key)) else {
            if let given = read.given(key) { throw read.invalid(key, value: given, expected: "a postgres:// URL") }
            return nil
        }
        guard !text.isEmpty else { return nil }
        do {
            return try PostgresURL(text)
        } catch {
            throw read.invalid(key, value: PostgresURL.redacted(text), expected: "a postgres:// URL (\(error))")
        }
    }

    /// Where the data is, for the startup log and errors: the SQLite file or the PostgreSQL URL
    /// (without its password).
    public var databaseDescription: String {
        databaseURL.map { "\($0)" } ?? databasePath
    }
}
