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
            "\(settings.feed.retentionMaxEntries)", "\(settings.feed.trimInterval)",
        ]
    }

    @Test func theShippedConfigFileStatesTheBuiltInDefaults() async throws {
        let path = Self.repository.appendingPathComponent("Config/stockroom.json").path
        let file = try await FileProvider<JSONSnapshot>(filePath: FilePath(path))
        let fromFile = try Settings(reader: ConfigReader(provider: file))
        let defaults = try Settings(reader: ConfigReader(provider: InMemoryProvider(values: [:])))
        #expect(Self.digest(fromFile) == Self.digest(defaults))
        #expect(defaults.host == "127.0.0.1" && defaults.port == 8080 && defaults.databasePath == "./data/stockroom.sqlite")
    }

    @Test func theEnvironmentVariablesTheREADMENamesAreRead() throws {
        let environment = [
            "HTTP_HOST": "0.0.0.0", "HTTP_PORT": "9000", "DB_PATH": "/tmp/x.sqlite", "DB_SYNCHRONOUS": "normal",
            "DB_BUSY_TIMEOUT_SECONDS": "9", "LOG_LEVEL": "debug", "IDEMPOTENCY_RETENTION_HOURS": "48", "DEMO": "true",
            "FEED_HEARTBEAT_SECONDS": "3", "FEED_WRITE_TIMEOUT_SECONDS": "4", "FEED_RETENTION_MAX_AGE_HOURS": "5",
            "FEED_RETENTION_MAX_ENTRIES": "6", "FEED_RETENTION_INTERVAL_SECONDS": "7",
        ]
        let settings = try Settings(reader: ConfigReader(provider: EnvironmentVariablesProvider(environmentVariables: environment)))
        #expect(Self.digest(settings) == [
            "0.0.0.0", "9000", "/tmp/x.sqlite", "NORMAL", "9", "debug", "48", "true",
            "3.0 seconds", "4.0 seconds", "18000.0 seconds", "6", "7.0 seconds",
        ])
        // A README is only as good as this file: every variable above is in it.
        let readme = try String(contentsOf: Self.repository.appendingPathComponent("README.md"), encoding: .utf8)
        for name in environment.keys { #expect(readme.contains("`\(name)`"), "README lacks \(name)") }
    }

    @Test(arguments: [
        ["http.port": "70000"], ["db.synchronous": "sometimes"], ["log.level": "loud"], ["idempotency.retentionHours": "1"],
        ["feed.heartbeatSeconds": "0"], ["db.path": ""],
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
}
