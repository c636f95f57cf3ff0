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

    /// The settings `digest` leaves out, added later: caps, limits, timeouts, metrics access, the
    /// PostgreSQL URL and pool, and the revocation check. With `digest`, every key `Settings` reads.
    static func limitsDigest(_ settings: Settings) -> [String] {
        [
            "\(settings.feed.maxSubscribers)", "\(settings.feed.maxSubscribersPerToken)", "\(settings.feed.maxSnapshots)",
            "\(settings.feed.maxSnapshotsPerToken)", "\(settings.limits.clientsPerUser)",
            "\(settings.limits.writesPerSecond)", "\(settings.limits.writeBurst)", "\(settings.limits.deviceRetentionDays)",
            settings.metricsAccess.rawValue, "\(settings.connections.idleTimeout)", "\(settings.connections.headerTimeout)",
            "\(settings.connections.bodyTimeout)", "\(settings.connections.bodyMinBytesPerSecond)",
            "\(settings.connections.maxConnectionsSetting)", settings.databaseURL.map { "\($0)" } ?? "none", "\(settings.databaseMaxConnections)",
            "\(settings.revocationCheck)", "\(settings.limits.importMaxBytes)", "\(settings.limits.importMaxRows)",
        ]
    }

    /// `docs/settings.md` has a row for every key `Settings` reads, naming its environment variable,
    /// and its default column is the built-in default: each documented default, given explicitly,
    /// makes the same settings as no value at all.
    @Test func theSettingsGuideStatesEveryKeyWithItsVariableAndDefault() throws {
        let guide = try String(contentsOf: Self.repository.appendingPathComponent("docs/settings.md"), encoding: .utf8)
        var rows: [String: (variable: String, value: String?)] = [:]
        for line in guide.split(separator: "\n") where line.hasPrefix("| ") {
            // A cell's text may hold an escaped `\|`.
            let cells = line.replacing("\\|", with: "\u{1}").split(separator: "|", omittingEmptySubsequences: false)
                .map { $0.trimmingCharacters(in: .whitespaces) }
            guard cells.count >= 6, cells[2].hasPrefix("`"), cells[3].hasPrefix("`") else { continue }
            let unquoted = { (cell: String) in cell.hasPrefix("`") ? String(cell.dropFirst().prefix { $0 != "`" }) : nil }
            if let key = unquoted(cells[2]), let variable = unquoted(cells[3]) { rows[key] = (variable, unquoted(cells[5])) }
        }
        let defaults = try Settings(reader: ConfigReader(provider: InMemoryProvider(values: [:])))
        for key in try Self.keysRead() {
            guard let row = rows[key] else {
                Issue.record("docs/settings.md has no row for \(key)")
                continue
            }
            let variable = key.replacing(".", with: "_").replacing(/[A-Z]/) { "_" + $0.output }.uppercased()
            #expect(row.variable == variable, "\(key)'s variable")
            guard let value = row.value else { continue }  // "empty", "unset": no value is the default
            let given = try Settings(reader: ConfigReader(provider: EnvironmentVariablesProvider(environmentVariables: [variable: value])))
            #expect(Self.digest(given) == Self.digest(defaults) && Self.limitsDigest(given) == Self.limitsDigest(defaults),
                    "\(key): the guide's default \(value) is not the built-in one")
        }
    }

    /// The keys `Settings` reads, from its sources (`read.int("…"` and the like, `let key = "…"`).
    static func keysRead() throws -> Set<String> {
        let folder = repository.appendingPathComponent("Sources/StockroomServer/Settings")
        var keys: Set<String> = []
        for file in try FileManager.default.contentsOfDirectory(atPath: folder.path) where file.hasSuffix(".swift") {
            let text = try String(contentsOf: folder.appendingPathComponent(file), encoding: .utf8)
            for pattern in [#"read\.[a-z]+\("([A-Za-z.]+)""#, #"let key = "([A-Za-z.]+)""#] {
                for match in text.matches(of: try Regex(pattern)) { if let key = match.output[1].substring { keys.insert(String(key)) } }
            }
        }
        return keys
    }

    /// Every key `Settings` reads is in `digest` or `limitsDigest`: a key added without being added
    /// there fails here (the keys are read from the sources, as `read.int("…"` and the like).
    @Test func theDigestsCoverEveryKey() throws {
        let keys = try Self.keysRead()
        #expect(keys.count == 33, "keys read: \(keys.sorted())")
        // Each key, set to a value other than its default, changes a digest.
        let defaults = try Settings(reader: ConfigReader(provider: InMemoryProvider(values: [:])))
        let others: [String: ConfigValue] = [
            "http.host": .init(.string("0.0.0.0"), isSecret: false), "http.port": .init(.int(9), isSecret: false),
            "db.path": .init(.string("/tmp/other.sqlite"), isSecret: false), "db.synchronous": .init(.string("normal"), isSecret: false),
            "db.busyTimeoutSeconds": .init(.int(9), isSecret: false), "log.level": .init(.string("debug"), isSecret: false),
            "idempotency.retentionHours": .init(.int(99), isSecret: false), "demo": .init(.bool(true), isSecret: false),
            "feed.heartbeatSeconds": .init(.int(9), isSecret: false), "feed.writeTimeoutSeconds": .init(.int(9), isSecret: false),
            "feed.retention.maxAgeHours": .init(.int(9), isSecret: false), "feed.retention.maxEntries": .init(.int(9), isSecret: false),
            "feed.retention.intervalSeconds": .init(.int(9), isSecret: false), "feed.maxSubscribers": .init(.int(9), isSecret: false),
            "feed.maxSubscribersPerToken": .init(.int(9), isSecret: false), "limits.clientsPerUser": .init(.int(9), isSecret: false),
            "feed.maxSnapshots": .init(.int(9), isSecret: false), "feed.maxSnapshotsPerToken": .init(.int(9), isSecret: false),
            "limits.writesPerSecond": .init(.int(9), isSecret: false), "limits.writeBurst": .init(.int(9), isSecret: false),
            "limits.deviceRetentionDays": .init(.int(9), isSecret: false), "http.idleTimeoutSeconds": .init(.int(9), isSecret: false),
            "limits.importMaxBytes": .init(.int(9999), isSecret: false), "limits.importMaxRows": .init(.int(9), isSecret: false),
            "http.headerTimeoutSeconds": .init(.int(9), isSecret: false), "http.maxConnections": .init(.int(99), isSecret: false),
            "http.bodyTimeoutSeconds": .init(.int(9), isSecret: false), "http.bodyMinBytesPerSecond": .init(.int(9), isSecret: false),
            "db.maxConnections": .init(.int(9), isSecret: false), "metrics.access": .init(.string("admin"), isSecret: false),
            "auth.revocationCheckMilliseconds": .init(.int(99), isSecret: false),
            "http.corsAllowedOrigins": .init(.string("https://app.example.com"), isSecret: false),
            "db.url": .init(.string("postgres://u@localhost/db"), isSecret: false),
        ]
        #expect(Set(others.keys) == keys, "a value for every key")
        for (key, value) in others {
            let changed = try Settings(reader: ConfigReader(provider: InMemoryProvider(values: [AbsoluteConfigKey(stringLiteral: key): value])))
            #expect(
                Self.digest(changed) != Self.digest(defaults) || Self.limitsDigest(changed) != Self.limitsDigest(defaults),
                "\(key) changes neither digest")
        }
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
        ["http.host": "not a host"], ["http.host": "example.com/x"], ["http.host": "[::1]"],
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

    /// The reader takes a flag over the environment over the config file; a refused value is named
    /// by the one it took, so that nobody looks for an environment variable that is not set.
    @Test("a refused value names where it came from: the flag, the environment variable or the config file", arguments: [
        (["http.port": 99999], [:], [:], "invalid setting http.port (flag --http-port): 99999"),
        (["http.port": 99999], ["HTTP_PORT": "8080"], [:], "invalid setting http.port (flag --http-port): 99999"),
        ([:], ["HTTP_PORT": "99999"], ["http.port": 8080], "invalid setting http.port (environment variable HTTP_PORT): 99999"),
        ([:], [:], ["http.port": 99999], "invalid setting http.port (config file settings.json): 99999"),
        ([:], [:], ["log.level": "verbose"], #"invalid setting log.level (config file settings.json): "verbose""#),
        ([:], ["DB_BUSY_TIMEOUT_SECONDS": "soon"], [:], #"invalid setting db.busyTimeoutSeconds (environment variable DB_BUSY_TIMEOUT_SECONDS): "soon""#),
    ] as [([String: Int], [String: String], [String: any Sendable], String)])
    func aRefusedValueNamesItsOrigin(flags: [String: Int], environment: [String: String], file: [String: any Sendable], message: String) throws {
        func values(_ values: [String: any Sendable]) -> [AbsoluteConfigKey: ConfigValue] {
            Dictionary(uniqueKeysWithValues: values.map { key, value in
                (AbsoluteConfigKey(stringLiteral: key), ConfigValue((value as? Int).map { .int($0) } ?? .string("\(value)"), isSecret: false))
            })
        }
        let flagValues = InMemoryProvider(name: "flags", values: values(flags))
        let variables = EnvironmentVariablesProvider(environmentVariables: environment)
        let fileValues = InMemoryProvider(name: "file", values: values(file))
        #expect {
            try Settings(
                reader: ConfigReader(providers: [flagValues, variables, fileValues]),
                origins: [.flags(flagValues), .environment(variables), .file(fileValues, path: "settings.json")])
        } throws: { error in
            "\(error)".hasPrefix(message)
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

    /// The JSON provider hands `true` over as 1 and `1` as `true`: the file's own types are
    /// checked, so a boolean port, a numeric flag or a number where a name is expected stops
    /// startup naming the file; the shipped file and values of the right types pass.
    @Test(arguments: [
        (#"{"http": {"port": true}}"#, "http.port", "true"), (#"{"http": {"port": false}}"#, "http.port", "false"),
        (#"{"demo": 1}"#, "demo", "1"), (#"{"log": {"level": 3}}"#, "log.level", "3"),
        (#"{"http": {"host": true}}"#, "http.host", "true"), (#"{"feed": {"heartbeatSeconds": [5]}}"#, "feed.heartbeatSeconds", "a list"),
    ])
    func aConfigFileValueOfAnotherJSONTypeIsRefused(json: String, key: String, value: String) async throws {
        let (settings, path) = try await Self.readingConfigFile(json)
        #expect {
            try settings()
        } throws: { error in
            "\(error)".hasPrefix("invalid setting \(key) (config file \(path)): \(value); expected ")
        }
        let shipped = Self.repository.appendingPathComponent("Config/stockroom.json").path
        let shippedTypes = try #require(ConfigFileTypes(json: try Data(contentsOf: URL(fileURLWithPath: shipped)), file: shipped))
        _ = try Settings(reader: ConfigReader(provider: try await FileProvider<JSONSnapshot>(filePath: FilePath(shipped))), fileTypes: shippedTypes)
    }

    /// A key of the config file that no setting reads stops startup, naming it and the setting it
    /// most likely meant; a section given a value is refused as well.
    @Test(arguments: [
        (#"{"http": {"prot": 8080}}"#, "unknown setting http.prot (config file PATH); did you mean http.port?"),
        (#"{"htpp": {"port": 8080}}"#, "unknown setting htpp (config file PATH); did you mean http?"),
        (#"{"feed": {"retention": {"maxEntires": 5}}}"#, "unknown setting feed.retention.maxEntires (config file PATH); did you mean feed.retention.maxEntries?"),
        (#"{"db": {"synchronous": "full", "Synchronous": "normal"}}"#, "unknown setting db.Synchronous (config file PATH); did you mean db.synchronous?"),
        (#"{"colour": "red"}"#, "unknown setting colour (config file PATH)"),
        (#"{"http": {"port": 8080}, "extra": null}"#, "unknown setting extra (config file PATH)"),
        (#"{"http": 8080}"#, "invalid setting http (config file PATH): 8080; expected an object of http.* settings"),
        (#"{"http": {"corsAllowedOrigins": {}}}"#,
         "invalid setting http.corsAllowedOrigins (config file PATH): an object; expected a list of origins like https://app.example.com or http://127.0.0.1:3000"),
    ])
    func anUnknownConfigFileKeyIsRefused(json: String, message: String) async throws {
        let (settings, path) = try await Self.readingConfigFile(json)
        #expect {
            try settings()
        } throws: { error in
            "\(error)" == message.replacingOccurrences(of: "PATH", with: path)
        }
    }

    @Test("every key of a config file that sets everything is known, sections and lists included")
    func aConfigFileOfKnownKeysPasses() async throws {
        let json = #"{"http": {"host": "0.0.0.0", "port": 9090, "corsAllowedOrigins": ["https://app.example.com"]}, "#
            + #""db": {"url": "", "synchronous": "normal"}, "feed": {"retention": {"maxEntries": 5}}, "demo": true, "log": {"level": null}}"#
        let settings = try await Self.readingConfigFile(json).settings()
        #expect(settings.port == 9090 && settings.synchronous == .normal && settings.feed.retentionMaxEntries == 5 && settings.demo)
        #expect(settings.corsAllowedOrigins == ["https://app.example.com"] && settings.logLevel == .info)
    }

    @Test(arguments: ["0.0.0.0", "127.0.0.1", "::", "::1", "fe80::1%eth0", "localhost", "stock-room.example.com", "host_name"])
    func hostsAsTheyAreWrittenAreTaken(host: String) throws {
        let provider = InMemoryProvider(values: ["http.host": ConfigValue(.string(host), isSecret: false)])
        #expect(try Settings(reader: ConfigReader(provider: provider)).host == host)
    }

    /// `json` written as a config file (in a folder of its own, gone once read), and the reading of
    /// the settings from it with its JSON types; `path` is the file's.
    static func readingConfigFile(_ json: String) async throws -> (settings: () throws -> Settings, path: String) {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("stockroom-settings-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("config.json").path
        try Data(json.utf8).write(to: URL(fileURLWithPath: path))
        let file = try await FileProvider<JSONSnapshot>(filePath: FilePath(path))
        let types = try #require(ConfigFileTypes(json: Data(json.utf8), file: path))
        return ({ try Settings(reader: ConfigReader(provider: file), fileTypes: types) }, path)
    }
}
