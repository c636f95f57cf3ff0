import Foundation
import Logging
import NIOCore
import PostgresNIO
import ServiceLifecycle
import StockroomStorage
import Synchronization

/// Stockroom's storage on PostgreSQL: the same `Storage` as the SQLite store, on a database that
/// several daemons share. A daemon's writes are applied in batches (`PostgresCommitter`), each
/// batch one transaction on a pooled connection (READ COMMITTED, rows a write changes locked as it
/// reads them; when one write of a batch fails, the batch runs again with a savepoint per write); the batch's change entries take their seqs from
/// the one `log_head` row as the transaction's last step, so seqs are contiguous and in commit
/// order across every daemon (ARCHITECTURE.md, "PostgreSQL"). The pools (`PostgresPools`, one
/// per event loop) must run for as long as the store is used: `run()` runs them, as a service of
/// the server's group.
public final class PostgresStore: Storage, Service {
    let pools: PostgresPools
    let url: PostgresURL
    let logger: Logger
    /// The database epoch, named in every feed cursor.
    public let epoch: String
    /// The fan-out of this daemon's commits (and, with the listener, every daemon's) to its subscribers.
    public let hub: ChangeHub
    let tokenCache = TokenCache()
    let limits: StoreLimits
    /// How long a storage call may wait for PostgreSQL before it answers `unavailable`.
    let deadline: Duration
    /// How often the head is read when no notification came.
    let pollInterval: Duration
    let listenerState = Mutex(ListenerState())
    /// The storage calls in flight, which `watch` keeps from waiting for ever.
    let calls = PostgresCalls()
    /// This daemon's group commit: every write goes through it.
    let committer = PostgresCommitter()
    /// When shutdown began, for the imports that could outlast it.
    let shutdown = ShutdownClock()
    /// The epoch the database has taken since this store opened it (a restore), if any: from then
    /// on every call answers `unavailable` until the daemon is restarted.
    let replacedEpoch = Mutex<String?>(nil)
    /// Opened when `run` starts the pool: a connection asked for before waits for it.
    let started = Gate()
    /// Whether `run` listens for notifications (off only in tests of the poll).
    let listens: Bool
    /// This store's name in the notifications its writes send (`NotifiedEntries`): random, one per store.
    let sender = String(UInt64.random(in: 1...UInt64.max), radix: 16)
    /// How many entries the listener handed to the hub from notifications (`NotifiedEntries`)
    /// rather than reading them from `changes`.
    let notifiedEntries = Atomic<Int>(0)

    /// Connects to the database at `url`, migrates it (once, whatever other daemons do at the same
    /// moment) and reads the log's position. The pool is not running yet: run `run()`.
    public static func open(
        url: PostgresURL, limits: StoreLimits = StoreLimits(), maximumConnections: Int = 20, deadline: Duration = .seconds(5),
        pollInterval: Duration = .seconds(1), listens: Bool = true, logger: Logger = Logger(label: "stockroom.postgres")
    ) async throws -> PostgresStore {
        let connection = try await PostgresConnection.connect(
            configuration: try url.connectionConfiguration(), id: 0, logger: logger)
        let position: (epoch: String, head: Int64, trimmed: Int64, tokenGeneration: Int64)
        do {
            try await PostgresMigrator.migrate(connection, logger: logger)
            position = try await readPosition(connection, logger: logger)
            try? await connection.close()
        } catch {
            try? await connection.close()
            throw error
        }
        var configuration = url.clientConfiguration()
        configuration.options.connectTimeout = .seconds(2)
        // lock_timeout: a writer never waits for a lock longer than this (a stuck head answers
        // 503, not a hang); idle_in_transaction_session_timeout: a transaction left open by a
        // vanished daemon cannot hold the head for long. random_page_cost: every statement the
        // daemon sends finds its rows by key, in tables that live in memory; at the default 4.0
        // the planner judged a whole-table scan of `items` cheaper than a batch's index look-ups
        // while the table had a few thousand rows, and each batch of PUTs scanned all of it.
        // tcp_keepalives_*: PostgreSQL sends TCP keepalives on a pooled connection idle for 30 s
        // (over TCP; a Unix socket ignores them), which keeps a NAT or load balancer between them
        // from dropping it and closes it on PostgreSQL's side when the daemon is gone. They stand
        // in for postgres-nio's keep-alive query, which is off (`PostgresPools`).
        configuration.options.additionalStartupParameters = [
            ("application_name", "stockroom"),
            ("random_page_cost", "1.1"),
            ("lock_timeout", "\(deadline.milliseconds)"),
            ("statement_timeout", "\(2 * deadline.milliseconds)"),
            ("idle_in_transaction_session_timeout", "\(2 * deadline.milliseconds)"),
            ("tcp_keepalives_idle", "30"),
            ("tcp_keepalives_interval", "10"),
            ("tcp_keepalives_count", "3"),
        ]
        let pools = PostgresPools(
            configuration: configuration, maximumConnections: maximumConnections, group: PostgresClient.defaultEventLoopGroup, logger: logger)
        let hub = ChangeHub(head: position.head, trimmedThrough: position.trimmed, epoch: position.epoch)
        hub.observeTokenGeneration(position.tokenGeneration)
        return PostgresStore(
            pools: pools, url: url, epoch: position.epoch, hub: hub, limits: limits, deadline: deadline, pollInterval: pollInterval,
            listens: listens, logger: logger)
    }

    private init(
        pools: PostgresPools, url: PostgresURL, epoch: String, hub: ChangeHub, limits: StoreLimits, deadline: Duration,
        pollInterval: Duration, listens: Bool, logger: Logger
    ) {
        self.pollInterval = pollInterval
        self.listens = listens
        self.pools = pools
        self.url = url
        self.epoch = epoch
        self.hub = hub
        self.limits = limits
        self.deadline = deadline
        self.logger = logger
    }

    /// Runs the connection pools, the listener and the poll (`PostgresStore+Listener.swift`) until
    /// the task is cancelled or the service group shuts down.
    public func run() async throws {
        await cancelWhenGracefulShutdown {
            await withDiscardingTaskGroup { group in
                for client in self.pools.clients {
                    group.addTask { await client.run() }
                }
                self.started.open()
                if self.listens { group.addTask { await self.listen() } }
                group.addTask { await self.poll() }
                group.addTask { await self.watch() }
            }
        }
    }

    /// The epoch, the log's head and trim watermark, and the token generation, as one snapshot sees them.
    static func readPosition(_ connection: PostgresConnection, logger: Logger) async throws
        -> (epoch: String, head: Int64, trimmed: Int64, tokenGeneration: Int64)
    {
        let rows = try await connection.query(
            """
            SELECT (SELECT value FROM meta WHERE key = 'epoch'), (SELECT seq FROM log_head WHERE id = 1),
                   (SELECT value FROM meta WHERE key = 'trimmed_through'), (SELECT value FROM meta WHERE key = 'token_generation'),
                   (SELECT value FROM meta WHERE key = 'change_value_format')
            """, logger: logger)
        for try await (epoch, head, trimmed, generation, format) in rows.decode((String, Int64, String, String, String).self) {
            guard format == changeValueFormat else {
                throw PostgresStoreError.schema(
                    "the change log's values are in form \(format), and this stockroom reads and writes form \(changeValueFormat)")
            }
            return (epoch, head, Int64(trimmed) ?? 0, Int64(generation) ?? 0)
        }
        throw PostgresStoreError.schema("the database has no log_head row")
    }

    /// The form of `changes.value` (the API's JSON of the entity), as the SQLite store's `ChangeLog.valueFormat`.
    static let changeValueFormat = "2"

    /// Gives the database at `url` a new epoch (after a `pg_restore`, with the daemons stopped):
    /// every cursor from before gets `410 resyncRequired`, and a daemon still running on the
    /// database stops answering (503) until it is restarted. Returns the old and the new epoch.
    public static func startNewEpoch(url: PostgresURL, logger: Logger = Logger(label: "stockroom.postgres")) async throws
        -> (old: String, new: String)
    {
        let connection = try await PostgresConnection.connect(configuration: try url.connectionConfiguration(), id: 0, logger: logger)
        defer { Task { try? await connection.close() } }
        try await PostgresMigrator.migrate(connection, logger: logger)
        return try await transaction(on: connection, logger: logger) { connection in
            let rows = try await connection.query(
                """
                WITH old AS (SELECT value FROM meta WHERE key = 'epoch')
                UPDATE meta SET value = replace(gen_random_uuid()::text, '-', '') WHERE key = 'epoch'
                RETURNING (SELECT value FROM old), value, pg_notify('stockroom', 'e ' || value)::text
                """, logger: logger
            ).collect()
            guard let (old, new, _) = try rows.first?.decode((String, String, String).self) else {
                throw PostgresStoreError.schema("the database has no epoch")
            }
            return (old, new)
        }
    }

    /// Stops serving from a database that took a new epoch under this daemon (a restore): its
    /// streams end, and every call answers `unavailable` until the daemon is restarted.
    func epochChanged(to epoch: String) {
        guard epoch != self.epoch else { return }
        let first = replacedEpoch.withLock { replaced in
            guard replaced == nil else { return false }
            replaced = epoch
            return true
        }
        guard first else { return }
        logger.error(
            "the database was given a new epoch (a restore): this daemon answers 503 until it is restarted",
            metadata: ["epoch": "\(self.epoch)", "new": "\(epoch)"])
        hub.closeAll()
    }

    /// The identifiers of the migrations applied to the database, in order.
    public func appliedMigrations() async throws -> [String] {
        try await leased { connection in try await PostgresMigrator.applied(connection, logger: self.logger) }
    }
}
