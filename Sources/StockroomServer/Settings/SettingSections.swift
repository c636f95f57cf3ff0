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
    /// At most this many snapshots and exports streaming at once (`feed.maxSnapshots`, default 16;
    /// never more than the store's `maximumStreamedReads`: 16 on SQLite, half of `db.maxConnections`
    /// on PostgreSQL), each holding a read for as long as its client takes to read it.
    public var maxSnapshots: Int
    /// At most this many per token (`feed.maxSnapshotsPerToken`, default 4), so that one token's
    /// stalled downloads cannot hold every read.
    public var maxSnapshotsPerToken: Int

    init(_ read: SettingReader) throws {
        heartbeat = .seconds(try read.int("feed.heartbeatSeconds", default: 15, in: 1...3600))
        writeTimeout = .seconds(try read.int("feed.writeTimeoutSeconds", default: 30, in: 1...3600))
        retentionMaxAge = .seconds(try read.int("feed.retention.maxAgeHours", default: 168, in: 1...87_600) * 3600)
        retentionMaxEntries = try read.int("feed.retention.maxEntries", default: 1_000_000, in: 1...Int(Int32.max))
        trimInterval = .seconds(try read.int("feed.retention.intervalSeconds", default: 60, in: 1...86_400))
        maxSubscribers = try read.int("feed.maxSubscribers", default: 10_000, in: 1...1_000_000)
        maxSubscribersPerToken = try read.int("feed.maxSubscribersPerToken", default: 256, in: 1...1_000_000)
        maxSnapshots = try read.int("feed.maxSnapshots", default: 16, in: 1...10_000)
        maxSnapshotsPerToken = try read.int("feed.maxSnapshotsPerToken", default: 4, in: 1...10_000)
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
    /// The largest CSV file one import may send, in bytes (`limits.importMaxBytes`, default 512 MiB):
    /// more is `413`, and nothing is applied.
    public var importMaxBytes: Int
    /// The most rows one import may hold (`limits.importMaxRows`, default 2,000,000): applied in one
    /// transaction, during which other writes wait.
    public var importMaxRows: Int

    init(_ read: SettingReader) throws {
        clientsPerUser = try read.int("limits.clientsPerUser", default: 1000, in: 1...1_000_000)
        writesPerSecond = try read.int("limits.writesPerSecond", default: 0, in: 0...1_000_000)
        writeBurst = try read.int("limits.writeBurst", default: 100, in: 1...1_000_000)
        deviceRetentionDays = try read.int("limits.deviceRetentionDays", default: 90, in: 0...36_500)
        importMaxBytes = try read.int("limits.importMaxBytes", default: 512 << 20, in: 1024...(64 << 30))
        importMaxRows = try read.int("limits.importMaxRows", default: 2_000_000, in: 1...100_000_000)
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
    /// A request's body must arrive within this (`http.bodyTimeoutSeconds`, default 20), plus one
    /// second for every `bodyMinBytesPerSecond` bytes of it received, counting only the time the
    /// server waits for it; a slower body is answered `408 requestTimeout` and its connection closed.
    public var bodyTimeout: Duration
    /// The rate that extends a body's time (`http.bodyMinBytesPerSecond`, default 500).
    public var bodyMinBytesPerSecond: Int
    /// At most this many open connections; more are answered `503` with `Retry-After` and closed
    /// (`http.maxConnections`; 0, the default, means the open-file limit minus 128).
    public var maxConnectionsSetting: Int
    /// The connection cap in force, once `resolve` has read the open-file limit.
    public var maxConnections: Int

    init(_ read: SettingReader) throws {
        idleTimeout = .seconds(try read.int("http.idleTimeoutSeconds", default: 60, in: 1...3600))
        headerTimeout = .seconds(try read.int("http.headerTimeoutSeconds", default: 10, in: 1...3600))
        bodyTimeout = .seconds(try read.int("http.bodyTimeoutSeconds", default: 20, in: 1...3600))
        bodyMinBytesPerSecond = try read.int("http.bodyMinBytesPerSecond", default: 500, in: 1...(1 << 30))
        maxConnectionsSetting = try read.int("http.maxConnections", default: 0, in: 0...1_000_000)
        maxConnections = maxConnectionsSetting
    }

    /// The cap for an open-file limit of `fileLimit`: the setting, or the limit minus a reserve.
    mutating func resolve(fileLimit: Int) {
        maxConnections = maxConnectionsSetting > 0 ? maxConnectionsSetting : max(16, fileLimit - FileDescriptorLimit.reserve)
    }
}
