import Configuration
import Foundation
import StockroomServer
import SystemPackage
import Testing

@Suite("Settings")
struct SettingsTests {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// A comparable digest of every setting.
    static func digest(_ settings: Settings) -> [String] {
        [
            settings.host, "\(settings.port)", settings.databasePath, settings.synchronous.rawValue, "\(settings.busyTimeoutSeconds)",
            settings.logLevel.rawValue, "\(settings.idempotencyRetentionHours)", "\(settings.demo)",
            "\(settings.feed.heartbeat)", "\(settings.feed.writeTimeout)", "\(settings.feed.retentionMaxAge)",
            "\(settings.feed.retentionMaxEntries)", "\(settings.feed.trimInterval)", settings.corsAllowedOrigins.joined(separator: " "),
        ]
    }

    /// The settings `digest` leaves out, added later: caps, limits, timeouts and metrics access.
    static func limitsDigest(_ settings: Settings) -> [String] {
        [
            "\(settings.feed.maxSubscribers)", "\(settings.feed.maxSubscribersPerToken)", "\(settings.limits.clientsPerUser)",
            "\(settings.limits.writesPerSecond)", "\(settings.limits.writeBurst)", settings.metricsAccess.rawValue,
            "\(settings.connections.idleTimeout)", "\(settings.connections.headerTimeout)", "\(settings.connections.maxConnectionsSetting)",
        ]
    }

    @Test func theShippedConfigFileStatesTheBuiltInDefaults() async throws {
        let path = Self.repository.appendingPathComponent("Config/stockroom.json").path
        let file = try await FileProvider<JSONSnapshot>(filePath: FilePath(path))
        let fromFile = try Settings(reader: ConfigReader(provider: file))
        let defaults = try Settings(reader: ConfigReader(provider: InMemoryProvider(values: [:])))
        #expect(Self.digest(fromFile) == Self.digest(defaults))
        #expect(Self.limitsDigest(fromFile) == Self.limitsDigest(defaults), "a server started in the repository runs on these")
        #expect(defaults.host == "127.0.0.1" && defaults.port == 8080 && defaults.databasePath == "./data/stockroom.sqlite")
        #expect(defaults.corsAllowedOrigins.isEmpty, "CORS is off by default")
    }

    @Test func theEnvironmentVariablesTheSettingsGuideNamesAreRead() throws {
        let environment = [
            "HTTP_HOST": "0.0.0.0", "HTTP_PORT": "9000", "DB_PATH": "/tmp/x.sqlite", "DB_SYNCHRONOUS": "normal",
            "DB_BUSY_TIMEOUT_SECONDS": "9", "LOG_LEVEL": "debug", "IDEMPOTENCY_RETENTION_HOURS": "48", "DEMO": "true",
            "FEED_HEARTBEAT_SECONDS": "3", "FEED_WRITE_TIMEOUT_SECONDS": "4", "FEED_RETENTION_MAX_AGE_HOURS": "5",
            "FEED_RETENTION_MAX_ENTRIES": "6", "FEED_RETENTION_INTERVAL_SECONDS": "7",
            "HTTP_CORS_ALLOWED_ORIGINS": "https://app.example.com, http://127.0.0.1:3000",
        ]
        let settings = try Settings(reader: ConfigReader(provider: EnvironmentVariablesProvider(environmentVariables: environment)))
        #expect(Self.digest(settings) == [
            "0.0.0.0", "9000", "/tmp/x.sqlite", "NORMAL", "9", "debug", "48", "true",
            "3.0 seconds", "4.0 seconds", "18000.0 seconds", "6", "7.0 seconds", "https://app.example.com http://127.0.0.1:3000",
        ])
        // The settings guide is only as good as this file: every variable above is in it.
        let guide = try String(contentsOf: Self.repository.appendingPathComponent("docs/settings.md"), encoding: .utf8)
        for name in environment.keys { #expect(guide.contains("`\(name)`"), "docs/settings.md lacks \(name)") }
    }

    @Test(arguments: [
        ["http.port": "70000"], ["db.synchronous": "sometimes"], ["log.level": "loud"], ["idempotency.retentionHours": "1"],
        ["feed.heartbeatSeconds": "0"], ["db.path": ""], ["http.corsAllowedOrigins": "https://app.example.com/"],
        ["http.corsAllowedOrigins": "*"], ["http.corsAllowedOrigins": "app.example.com"],
    ])
    func badValuesAreRefusedNamingTheSetting(values: [String: String]) throws {
        let provider = InMemoryProvider(values: Dictionary(uniqueKeysWithValues: values.map { key, value in
            (AbsoluteConfigKey(stringLiteral: key), ConfigValue(Int(value).map { .int($0) } ?? .string(value), isSecret: false))
        }))
        #expect {
            try Settings(reader: ConfigReader(provider: provider))
        } throws: { error in
            "\(error)".contains(values.keys.first ?? "?")
        }
    }

    @Test("a value of the wrong type stops startup, naming the setting, its variable, the value and what is expected", arguments: [
        ("HTTP_PORT", "abc", "http.port"), ("HTTP_PORT", "80.5", "http.port"), ("HTTP_PORT", "-1", "http.port"),
        ("DEMO", "banana", "demo"), ("DB_BUSY_TIMEOUT_SECONDS", "5s", "db.busyTimeoutSeconds"),
        ("DB_SYNCHRONOUS", "sometimes", "db.synchronous"), ("LOG_LEVEL", "loud", "log.level"),
        ("IDEMPOTENCY_RETENTION_HOURS", "a day", "idempotency.retentionHours"),
        ("FEED_HEARTBEAT_SECONDS", "fast", "feed.heartbeatSeconds"), ("FEED_RETENTION_MAX_ENTRIES", "1e6", "feed.retention.maxEntries"),
        ("HTTP_HOST", "", "http.host"),
    ])
    func wrongTypesAreRefused(variable: String, value: String, key: String) throws {
        let reader = ConfigReader(provider: EnvironmentVariablesProvider(environmentVariables: [variable: value]))
        #expect {
            try Settings(reader: reader)
        } throws: { error in
            let text = "\(error)"
            return text.contains(key) && text.contains(variable) && text.contains(value.isEmpty ? "\"\"" : value) && text.contains("expected")
        }
    }

    @Test("a config file value of the wrong type is refused too")
    func wrongTypesInTheConfigFile() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("stockroom-settings-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        for (json, key) in [(#"{"http": {"port": "abc"}}"#, "http.port"), (#"{"demo": "banana"}"#, "demo")] {
            let path = directory.appendingPathComponent("config.json")
            try Data(json.utf8).write(to: path)
            let file = try await FileProvider<JSONSnapshot>(filePath: FilePath(path.path))
            #expect {
                try Settings(reader: ConfigReader(provider: file))
            } throws: { error in
                "\(error)".contains(key)
            }
        }
    }
}
