import Foundation
import Logging
import NIOCore
import PostgresNIO
import ServiceLifecycle
import StockroomCore
import StockroomStorage
import StockroomWire
import Synchronization

/// Stockroom's storage on PostgreSQL: the same `Storage` as the SQLite store, on a database that
/// several daemons share. A daemon's writes are applied in batches (`PostgresCommitter`), each
/// batch one transaction on a pooled connection (READ COMMITTED, rows a write changes locked as it
/// reads them, each write in its own savepoint); the batch's change entries take their seqs from
/// the one `log_head` row as the transaction's last step, so seqs are contiguous and in commit
/// order across every daemon (ARCHITECTURE.md, "PostgreSQL"). The pool (`PostgresClient`) must
/// run for as long as the store is used: `run()` runs it, as a service of the server's group.
public final class PostgresStore: Storage, Service {
    let client: PostgresClient
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
    /// The epoch the database has taken since this store opened it (a restore), if any: from then
    /// on every call answers `unavailable` until the daemon is restarted.
    let replacedEpoch = Mutex<String?>(nil)
    /// Opened when `run` starts the pool: a connection asked for before waits for it.
    let started = Gate()
    /// Whether `run` listens for notifications (off only in tests of the poll).
    let listens: Bool

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
        configuration.options.maximumConnections = maximumConnections
        configuration.options.connectTimeout = .seconds(2)
        // A writer never waits for a lock longer than this (a stuck head answers 503, not a hang);
        // a transaction left open by a vanished daemon cannot hold the head for long.
        configuration.options.additionalStartupParameters = [
            ("application_name", "stockroom"),
            ("lock_timeout", "\(deadline.milliseconds)"),
            ("statement_timeout", "\(2 * deadline.milliseconds)"),
            ("idle_in_transaction_session_timeout", "\(2 * deadline.milliseconds)"),
        ]
        let client = PostgresClient(configuration: configuration, backgroundLogger: logger)
        let hub = ChangeHub(head: position.head, trimmedThrough: position.trimmed, epoch: position.epoch)
        hub.observeTokenGeneration(position.tokenGeneration)
        return PostgresStore(
            client: client, url: url, epoch: position.epoch, hub: hub, limits: limits, deadline: deadline, pollInterval: pollInterval,
            listens: listens, logger: logger)
    }

    private init(
        client: PostgresClient, url: PostgresURL, epoch: String, hub: ChangeHub, limits: StoreLimits, deadline: Duration,
        pollInterval: Duration, listens: Bool, logger: Logger
    ) {
        self.pollInterval = pollInterval
        self.listens = listens
        self.client = client
        self.url = url
        self.epoch = epoch
        self.hub = hub
        self.limits = limits
        self.deadline = deadline
        self.logger = logger
    }

    /// Runs the connection pool, the listener and the poll (`PostgresStore+Listener.swift`) until
    /// the task is cancelled or the service group shuts down.
    public func run() async throws {
        await cancelWhenGracefulShutdown {
            await withDiscardingTaskGroup { group in
                group.addTask {
                    self.started.open()
                    await self.client.run()
                }
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
        try await client.withConnection { connection in try await PostgresMigrator.applied(connection, logger: self.logger) }
    }

    // MARK: Transactions

    /// Runs `body` in the next batch of this daemon's group commit (`PostgresCommitter`, `apply`)
    /// and returns its value once the batch committed and its change entries were published. A
    /// deadlock (40P01), a serialization failure (40001) or a state that changed under it
    /// (`WriteRetry`) runs it again in a later batch, up to `attempts` times; storage failures are
    /// `unavailable`.
    func write<Value: Sendable>(_ body: @escaping @Sendable (PostgresWrite) async throws -> Value) async throws -> Value {
        try await write(body) { value, _, _ in value }
    }

    /// `write`, with `finish` completing the value once the batch's entries are numbered (`head`:
    /// the log's head after this write's entries), still inside the transaction.
    func write<Value: Sendable>(
        _ body: @escaping @Sendable (PostgresWrite) async throws -> Value,
        finish: @escaping @Sendable (Value, Int64, PostgresWrite) async throws -> Value
    ) async throws -> Value {
        let job = PostgresJob(body: body, finish: finish)
        if committer.enqueue(job) {
            await committer.drainOnce { batch in await self.apply(batch) }
        }
        return try await job.wait()
    }

    /// What one batch's transaction decided for each of its writes.
    private struct BatchOutcome: Sendable {
        var applied: [any PostgresQueuedWrite] = []
        var refused: [(write: any PostgresQueuedWrite, error: any Error)] = []
        var again: [any PostgresQueuedWrite] = []
        var entries: [ChangeEntry] = []
    }

    /// Applies one batch in one transaction (`PostgresCommitter`), answers its writes, and returns
    /// those to run again. The batch runs first together, without savepoints (each costs two
    /// statements per write): when every write succeeds, as most do, that is the batch. When one
    /// of several fails, the transaction is rolled back and the batch runs again, each write in its
    /// own savepoint. A write alone needs none: its failure is the transaction's.
    func apply(_ batch: [any PostgresQueuedWrite]) async -> [any PostgresQueuedWrite] {
        do {
            return await answer(try await transaction { try await self.applyTogether(batch, $0) })
        } catch is OneWriteFailed {
            committer.countBatchRunAgain()
        } catch {
            if batch.count == 1, Self.isRetryable(error), batch[0].runs < Self.attempts { return batch }
            fail(batch, error)
            return []
        }
        do {
            return await answer(try await transaction { try await self.applyInSavepoints(batch, $0) })
        } catch {
            fail(batch, error)
            return []
        }
    }

    /// Runs `body` in one transaction on a pooled connection, whatever happens to the task that
    /// runs it (`leased(cancellable: false)`).
    private func transaction(_ body: @escaping @Sendable (PostgresWrite) async throws -> BatchOutcome) async throws -> BatchOutcome {
        try await leased(cancellable: false) { connection in
            try await Self.transaction(on: connection, logger: self.logger) { connection in
                try await body(PostgresWrite(connection: connection, logger: self.logger, epoch: self.epoch))
            }
        }
    }

    /// Publishes a committed batch's entries, then answers its writes; returns those to run again.
    private func answer(_ outcome: BatchOutcome) async -> [any PostgresQueuedWrite] {
        if !outcome.entries.isEmpty { await publish(outcome.entries) }
        for write in outcome.applied { write.succeed() }
        for (write, error) in outcome.refused { write.fail(error) }
        return outcome.again
    }

    /// Answers every write of a batch whose transaction failed.
    private func fail(_ batch: [any PostgresQueuedWrite], _ error: any Error) {
        let error = Self.mapped(error)
        for write in batch { write.fail(error) }
    }

    /// A write of a batch run without savepoints failed: the batch runs again with them.
    private struct OneWriteFailed: Error {}

    /// Every write of `batch` one after another, with no savepoint: as soon as one fails, the
    /// transaction is rolled back with `OneWriteFailed` (with the write's own error when it is the
    /// batch's only one); then one head step and each write's finish.
    private func applyTogether(_ batch: [any PostgresQueuedWrite], _ write: PostgresWrite) async throws -> BatchOutcome {
        var applied: [(write: any PostgresQueuedWrite, entries: Int)] = []
        for job in batch {
            do {
                try await job.run(write)
            } catch {
                if batch.count == 1 || write.connection.isClosed || Self.isConnectionGone(error) { throw error }
                throw OneWriteFailed()
            }
            applied.append((job, write.entryCount))
        }
        return try await finish(applied, write, outcome: BatchOutcome())
    }

    /// One head step for the applied writes' entries, then each one's finish (`head`: the log's
    /// head after its entries).
    private func finish(
        _ applied: [(write: any PostgresQueuedWrite, entries: Int)], _ write: PostgresWrite, outcome: BatchOutcome
    ) async throws -> BatchOutcome {
        var outcome = outcome
        let head = try await write.appendLog()
        let numbered = write.appended
        let before = numbered.first.map { $0.seq - 1 } ?? head
        for (job, entries) in applied {
            try await job.finish(write, head: entries == 0 ? before : numbered[entries - 1].seq)
        }
        outcome.applied = applied.map(\.write)
        outcome.entries = numbered
        return outcome
    }

    /// Each write of `batch` in a savepoint of its own, then one head step for all their entries,
    /// then each applied write's finish.
    private func applyInSavepoints(_ batch: [any PostgresQueuedWrite], _ write: PostgresWrite) async throws -> BatchOutcome {
        var outcome = BatchOutcome()
        /// Each applied write and how many entries the transaction had after it.
        var applied: [(write: any PostgresQueuedWrite, entries: Int)] = []
        for job in batch {
            let mark = write.mark
            try await write.query("SAVEPOINT job")
            do {
                try await job.run(write)
                try await write.query("RELEASE SAVEPOINT job")
                applied.append((job, write.entryCount))
            } catch {
                // The transaction itself is gone: the whole batch fails.
                if write.connection.isClosed || Self.isConnectionGone(error) { throw error }
                try await write.query("ROLLBACK TO SAVEPOINT job")
                try await write.query("RELEASE SAVEPOINT job")
                write.discard(from: mark)
                if Self.isRetryable(error), job.runs < Self.attempts {
                    outcome.again.append(job)
                } else {
                    outcome.refused.append((job, Self.mapped(error)))
                }
            }
        }
        return try await finish(applied, write, outcome: outcome)
    }

    /// Runs `body` between `begin` and COMMIT on `connection`: every transaction of the store, the
    /// migrator and the commands. On a failure the transaction is rolled back, unless the
    /// connection itself is gone (the server ended the session, the socket closed): PostgreSQL has
    /// then rolled it back, and a ROLLBACK sent on such a connection can wait for ever (seen with a
    /// backend terminated mid-statement, through postgres-nio's `withTransaction`). A COMMIT that
    /// fails leaves the outcome unknown: `unavailable`, never a claim either way.
    static func transaction<Value>(
        on connection: PostgresConnection, begin: PostgresQuery = "BEGIN", logger: Logger,
        _ body: (PostgresConnection) async throws -> Value
    ) async throws -> Value {
        try await connection.query(begin, logger: logger)
        let value: Value
        do {
            value = try await body(connection)
        } catch {
            if !connection.isClosed, !Self.isConnectionGone(error) {
                _ = try? await connection.query("ROLLBACK", logger: logger)
            }
            throw error
        }
        do {
            try await connection.query("COMMIT", logger: logger)
        } catch {
            throw StoreError.unavailable(
                "the commit's outcome is unknown (PostgreSQL: \(Self.describe(error))); a retry with the same Idempotency-Key is safe")
        }
        return value
    }

    /// Whether `error` means the connection can carry nothing more.
    static func isConnectionGone(_ error: any Error) -> Bool {
        guard let error = error as? PSQLError else { return false }
        if let state = error.serverInfo?[.sqlState] { return state.hasPrefix("57P") || state.hasPrefix("08") }
        return [.serverClosedConnection, .clientClosedConnection, .uncleanShutdown, .connectionError].contains(error.code)
    }

    /// How many times a write runs before its retryable failure is answered (`unavailable`).
    static let attempts = 5

    /// Runs `body` on a pooled connection outside any explicit transaction (each statement its own
    /// snapshot), mapping storage failures to `unavailable`.
    func read<Value: Sendable>(_ body: @escaping @Sendable (PostgresConnection) async throws -> Value) async throws -> Value {
        do {
            return try await leased(body)
        } catch {
            throw Self.mapped(error)
        }
    }

    static func sqlState(_ error: any Error) -> String? {
        (error as? PSQLError)?.serverInfo?[.sqlState]
    }

    /// A deadlock or serialization failure, or a state that changed under the write
    /// (`WriteRetry`): running the write again decides it.
    static func isRetryable(_ error: any Error) -> Bool {
        if error is WriteRetry { return true }
        guard let error = error as? PSQLError, let state = error.serverInfo?[.sqlState] else { return false }
        return state == "40001" || state == "40P01"
    }

    /// Storage failures (PostgreSQL unreachable, shutting down, out of space, read-only, a lock or
    /// statement timeout, the pool closed or its circuit breaker open) are `unavailable`; text with
    /// a NUL (which PostgreSQL cannot store) a validation failure; anything else is rethrown.
    static func mapped(_ error: any Error) -> any Error {
        if error is StoreError || error is DomainError || error is ReplayedResponse { return error }
        if error is WriteRetry { return StoreError.unavailable("the write met concurrent changes \(attempts) times; retry it") }
        if let error = error as? PSQLError {
            if let state = error.serverInfo?[.sqlState] {
                if state == "22021" {
                    return StoreError.domain(.validationFailed(field: nil, message: "text must not contain U+0000"))
                }
                let unavailableClasses = ["08", "53", "57", "58"]
                if unavailableClasses.contains(String(state.prefix(2))) || ["25006", "55P03", "40001", "40P01", "23505"].contains(state) {
                    return StoreError.unavailable("PostgreSQL: \(error.serverInfo?[.message] ?? state) (\(state))")
                }
                return error
            }
            return StoreError.unavailable("PostgreSQL: \(String(reflecting: error.code))")
        }
        if error is CancellationError { return error }
        let type = String(reflecting: type(of: error))
        if type.contains("ConnectionPoolError") || type.contains("ChannelError") || type.contains("NIOConnectionError")
            || error is IOError
        {
            return StoreError.unavailable("PostgreSQL cannot be reached: \(error)")
        }
        return error
    }
}

/// Closed until `open`; then `wait` returns at once.
final class Gate: Sendable {
    private let state = Mutex<(open: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

    func open() {
        let waiters = state.withLock { state in
            state.open = true
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    func wait() async {
        await withCheckedContinuation { continuation in
            let isOpen = state.withLock { state in
                if !state.open { state.waiters.append(continuation) }
                return state.open
            }
            if isOpen { continuation.resume() }
        }
    }
}

extension Duration {
    var milliseconds: Int64 {
        components.seconds * 1000 + components.attoseconds / 1_000_000_000_000_000
    }
}
