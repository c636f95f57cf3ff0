import StockroomStorage
import Foundation
import GRDB
import Synchronization

#if canImport(GRDBSQLite)
    import GRDBSQLite
#elseif canImport(SQLite3)
    import SQLite3
#endif

/// Group commit: every write of the store queues here, and the one writer connection applies
/// whatever has queued in one transaction, each write inside its own savepoint. A write that
/// fails rolls back its savepoint alone and gets its own error; the others commit together with
/// one fsync, and each caller is answered only after that commit. While one batch commits, the
/// next one queues, so under load many writes share a commit and alone a write commits at once
/// (at synchronous=NORMAL on its caller's own thread: see `init`).
final class GroupCommitter: Sendable {
    /// How many writes one transaction takes at most, so that no batch holds the writer for long.
    static let maximumBatch = 256

    private struct State {
        var pending: [any QueuedWrite] = []
        /// A batch, an inline write or a checkpoint holds the writer connection.
        var draining = false
        /// How many writes the last transaction took.
        var lastBatch = 0
        var statistics = Statistics()
    }

    /// What the committer has done so far.
    struct Statistics: Hashable, Sendable {
        /// Transactions committed (or attempted).
        var batches = 0
        /// Writes applied in them.
        var writes = 0
        /// Of those, writes applied on their caller's thread (`inline`).
        var inlineWrites = 0
        /// Checkpoints run on the writer's queue (`inline` only; otherwise SQLite checkpoints in COMMIT).
        var checkpoints = 0
        /// Checkpoints run beside the writer when writes paused (`inline` only).
        var quietCheckpoints = 0
    }

    private let writer: any DatabaseWriter
    /// The feed's hub, whose wake-ups for a batch's commit wait until the batch's writers are answered.
    private let hub: ChangeHub
    /// Reads what each commit publishes to the hub, just before the commit (`prepareCommit`).
    let observer: ChangeObserver
    private let state = Mutex(State())
    /// Set for `inline` commits: the WAL's length after the last commit, for the committer's own checkpoints.
    private let wal: WALLength?
    /// Set for `inline` commits on a database file: runs the checkpoint beside the writer.
    private let checkpointer: Checkpointer?
    /// The server's count of its write requests in flight: a write runs inline only when it is alone.
    private let writes: WritesInFlight
    /// The busy timeout it was given, in milliseconds.
    private let configuredBusyTimeout: Int32
    /// The store's shutdown: once it has begun no write waits for a lock another process holds: it
    /// fails at once, as when the busy timeout passes (a write already waiting waits on), so that
    /// the writes queued then end within shutdown's bound.
    private let shutdown: ShutdownClock

    /// The writer connection's busy timeout, restored after an inline write's `BEGIN`, which does
    /// not wait: the one it was given, or 0 once shutdown has begun.
    private var busyTimeoutMilliseconds: Int32 {
        shutdown.hasBegun ? 0 : configuredBusyTimeout
    }

    /// With `inline` (for synchronous=NORMAL, whose COMMIT does not wait for a disk flush), a write
    /// that finds nothing queued and nothing running is applied on its caller's thread, an event loop,
    /// instead of hopping to the writer's queue and back: two thread wake-ups fewer on the path of
    /// a lone write's answer. SQLite's automatic checkpoint, which runs inside the COMMIT that takes
    /// the WAL past 1,000 pages and syncs both files, would then stall that event loop; so it is
    /// turned off on the writer connection, and once the WAL is past 1,000 pages the `Checkpointer`
    /// runs the checkpoint on a connection of its own at the next pause in the writes (1 ms without
    /// a commit). Run on the writer's queue after the commit that crossed the mark, it would make the
    /// write after it wait for the checkpoint; run beside writes that keep coming, it would slow each
    /// of them. When the writes never pause and the WAL reaches 4,000 pages, the writer checkpoints
    /// on its queue, so the WAL stays bounded (a checkpoint copies each page once, however many
    /// versions of it the WAL holds).
    /// Nor does an inline write wait on an event loop for another process's write lock (a CLI
    /// command on the same file): its `BEGIN` does not wait, and when the lock is taken the write
    /// queues, to wait on the writer's queue for up to `busyTimeout` as any other.
    /// And a write runs inline only when writes are not coming together: the server is handling no
    /// other write request (`writes`, the server's hint: reads and waiting feed requests do not
    /// count), and the last batch took one write. Were every lone
    /// write inline, under concurrent writes the first write after each batch would hold its loop
    /// while the others wait behind it (on the writer's queue a write runs beside the loops and
    /// shares its commit).
    init(
        writer: any DatabaseWriter, hub: ChangeHub, observer: ChangeObserver, inline: Bool = false,
        busyTimeout: Duration = .seconds(5), writes: WritesInFlight = WritesInFlight(), shutdown: ShutdownClock = ShutdownClock()
    ) {
        self.writer = writer
        self.shutdown = shutdown
        self.writes = writes
        self.hub = hub
        self.observer = observer
        wal = inline ? WALLength(on: writer) : nil
        checkpointer = wal.flatMap { Checkpointer(beside: writer, wal: $0) }
        configuredBusyTimeout = Int32(clamping: busyTimeout.components.seconds * 1000 + busyTimeout.components.attoseconds / 1_000_000_000_000_000)
    }

    /// Batches and writes so far.
    var statistics: Statistics {
        var statistics = state.withLock { $0.statistics }
        statistics.quietCheckpoints = checkpointer?.count ?? 0
        return statistics
    }

    /// Runs `body` while no checkpoint runs beside the writer (one running would make another
    /// connection's checkpoint fail at once).
    func excludingCheckpoints<T>(_ body: () throws -> T) rethrows -> T {
        guard let checkpointer else { return try body() }
        return try checkpointer.excluding(body)
    }

    /// Pages in the WAL after the last commit (`inline` only).
    var walPages: Int? { wal?.length }

    /// Writes queued and not yet taken into a batch.
    var pendingCount: Int { state.withLock { $0.pending.count } }

    /// Runs `body` in the next batch; returns its value once the batch is durably committed.
    func write<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        if wal != nil, writes.count <= 1, let outcome = writeInline(body) { return try Self.value(outcome.get()) }
        let value = try await withCheckedThrowingContinuation { continuation in
            let startDrain = state.withLock { state in
                state.pending.append(Write(body: body, continuation: continuation))
                defer { state.draining = true }
                return !state.draining
            }
            if startDrain {
                writer.asyncWriteWithoutTransaction { [self] db in drain(db) }
            }
        }
        return try Self.value(value)
    }

    /// A write's value, as its `Write` kept it (see there).
    private static func value<T>(_ value: any Sendable) throws -> T {
        guard let value = value as? T else { throw DatabaseError(message: "a write's value is not of its type") }
        return value
    }

    /// Applies `body` alone on the calling thread when the writer is idle and gives its outcome; nil
    /// (nothing run) when the writer is busy, here or in another process.
    private func writeInline<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) -> Result<any Sendable, any Error>? {
        let idle = state.withLock { state in
            // After a batch of several, writes are coming together: the next ones queue and share a commit.
            guard !state.draining, state.lastBatch <= 1 else { return false }
            state.draining = true
            state.statistics.batches += 1
            state.statistics.writes += 1
            state.statistics.inlineWrites += 1
            return true
        }
        guard idle else { return nil }
        let write = Write(body: body)
        let applied = applyInline(write)
        // Writes that queued meanwhile, or a checkpoint now due on the writer, go to the writer's queue.
        let due = checkpointOnWriterDue()
        let startDrain = state.withLock { state in
            if !applied {
                state.statistics.batches -= 1
                state.statistics.writes -= 1
                state.statistics.inlineWrites -= 1
            }
            if state.pending.isEmpty && !due { state.draining = false }
            return state.draining
        }
        if startDrain { writer.asyncWriteWithoutTransaction { [self] db in drain(db) } }
        return applied ? write.result : nil
    }

    /// `applyAlone` on the calling thread (GRDB's synchronous `writeWithoutTransaction`: it runs
    /// there when the writer's queue is free, which `draining` guarantees but for a drain's last
    /// instant); false, with nothing run, when another connection holds the write lock.
    private func applyInline(_ write: Write<some Sendable>) -> Bool {
        writer.writeWithoutTransaction { db in
            guard beginWithoutWaiting(db) else { return false }
            hub.holdingWakes { applyAlone(write, db, begun: true) }
            return true
        }
    }

    /// `BEGIN IMMEDIATE` with a busy timeout of 0: false when the write lock is taken (or BEGIN
    /// fails otherwise; the write then meets that failure on the writer's queue).
    private func beginWithoutWaiting(_ db: Database) -> Bool {
        withoutWaitingForLocks(db) {
            do {
                try Self.beginImmediate(db)
                return true
            } catch {
                return false
            }
        }
    }

    /// Runs `body` on the writer connection with a busy timeout of 0 (a lock another process holds
    /// fails it at once), then restores the writer's busy timeout.
    func withoutWaitingForLocks<T>(_ db: Database, _ body: () throws -> T) rethrows -> T {
        let connection = db.sqliteConnection
        sqlite3_busy_timeout(connection, 0)
        defer { sqlite3_busy_timeout(connection, busyTimeoutMilliseconds) }
        return try body()
    }

    /// Applies batches on the writer connection until nothing is queued (and, with `inline`, runs
    /// the checkpoint that came due).
    private func drain(_ db: Database) {
        while true {
            if shutdown.hasBegun { sqlite3_busy_timeout(db.sqliteConnection, 0) }
            if checkpointOnWriterDue(), let wal {
                checkpoint(db, wal)
            }
            let batch: [any QueuedWrite] = state.withLock { state in
                let batch = Array(state.pending.prefix(Self.maximumBatch))
                state.pending.removeFirst(batch.count)
                if batch.isEmpty {
                    state.draining = false
                } else {
                    state.lastBatch = batch.count
                    state.statistics.batches += 1
                    state.statistics.writes += batch.count
                }
                return batch
            }
            if batch.isEmpty { return }
            hub.holdingWakes { apply(batch, db) }
        }
    }

    /// Whether the writer must run a checkpoint now: the WAL reached `checkpointOverdue` (the
    /// checkpointer's runs did not start it over), or one is due and there is no checkpointer. When
    /// one is due and not overdue, asks the checkpointer for one instead.
    private func checkpointOnWriterDue() -> Bool {
        guard let wal else { return false }
        // By the WAL's whole length: what the checkpointer copied does not start it over.
        if wal.checkpointOverdue { return true }
        guard wal.checkpointDue else { return false }
        guard let checkpointer else { return true }
        checkpointer.request()
        return false
    }

    /// SQLite's automatic checkpoint, run here instead of inside a COMMIT: PASSIVE, as SQLite's is.
    private func checkpoint(_ db: Database, _ wal: WALLength) {
        wal.reset()
        state.withLock { $0.statistics.checkpoints += 1 }
        // A checkpoint that fails or cannot finish (a reader still needs the WAL) leaves the WAL
        // past the mark, so the next commit tries again, as SQLite's own does; writes go on.
        _ = try? db.checkpoint(.passive)
    }

    private func apply(_ batch: [any QueuedWrite], _ db: Database) {
        if batch.count == 1 {
            applyAlone(batch[0], db)
            return
        }
        do {
            try Self.inImmediateTransaction(db, endedWithoutCommit: observer.transactionEndedWithoutCommit) {
                for write in batch {
                    do {
                        try Self.inSavepoint(db) { try write.run(db) }
                    } catch {
                        write.failed(error)
                        // Some errors (a full disk, I/O) roll back the whole transaction in SQLite:
                        // then nothing of the batch is applied, and every write of it fails alike.
                        guard db.isInsideTransaction else { throw BatchAborted(cause: error) }
                    }
                }
                observer.prepareCommit(db)
                return .commit
            }
        } catch {
            let cause = (error as? BatchAborted)?.cause ?? error
            for write in batch { write.finish(batchFailure: cause) }
            return
        }
        for write in batch { write.finish(batchFailure: nil) }
    }

    /// A batch of one write: its transaction is its savepoint. The write's own failure rolls the
    /// transaction back, with no `SAVEPOINT` and `RELEASE` (a write that waits alone is the one
    /// whose latency shows).
    private func applyAlone(_ write: any QueuedWrite, _ db: Database, begun: Bool = false) {
        var failedAlone = false
        do {
            try Self.inImmediateTransaction(db, begun: begun, endedWithoutCommit: observer.transactionEndedWithoutCommit) {
                do {
                    try write.run(db)
                    observer.prepareCommit(db)
                    return .commit
                } catch {
                    write.failed(error)
                    failedAlone = true
                    return .rollback
                }
            }
        } catch {
            // BEGIN or COMMIT failed: nothing is applied. (After the write's own failure only the
            // ROLLBACK can fail, when SQLite has rolled back already: its own error stands.)
            if !failedAlone {
                write.finish(batchFailure: error)
                return
            }
        }
        write.finish(batchFailure: nil)
    }

    /// `db.inTransaction(.immediate)` with its `BEGIN` and `COMMIT` prepared once: GRDB's parses and
    /// prepares both statements anew on every call.
    /// As GRDB's: a failure in `body` or of the `COMMIT` rolls back (when SQLite has not already) and
    /// the first error is thrown; `.rollback` rolls back. `endedWithoutCommit` runs after a
    /// transaction begun here ends without a commit, whatever ended it.
    /// With `begun`, the caller has run the `BEGIN` already.
    static func inImmediateTransaction(
        _ db: Database, begun: Bool = false, endedWithoutCommit: () -> Void = {}, _ body: () throws -> Database.TransactionCompletion
    ) throws {
        if !begun { try beginImmediate(db) }
        var firstError: (any Error)?
        var needsRollback = true
        do {
            if try body() == .commit {
                try db.cachedStatement(sql: "COMMIT TRANSACTION").execute()
                needsRollback = false
            }
        } catch {
            firstError = error
        }
        if needsRollback {
            do {
                try db.rollback()
            } catch {
                firstError = firstError ?? error
            }
            endedWithoutCommit()
        }
        if let firstError { throw firstError }
    }

    private static let writeSavepoint = CachedSavepoint("write")

    /// Runs `body` in a savepoint of the batch's transaction, undone when it throws: GRDB's
    /// `inSavepoint`, from statements prepared once (`CachedSavepoint`).
    private static func inSavepoint(_ db: Database, _ body: () throws -> Void) throws {
        try writeSavepoint.open(db)
        do {
            try body()
        } catch {
            try writeSavepoint.abandon(db)
            throw error
        }
        try writeSavepoint.release(db)
    }

    /// `BEGIN IMMEDIATE`, prepared once per connection.
    private static func beginImmediate(_ db: Database) throws {
        try db.cachedStatement(sql: "BEGIN IMMEDIATE TRANSACTION").execute()
    }

    private struct BatchAborted: Error {
        let cause: any Error
    }
}

/// A write waiting in the queue, whatever its result type.
private protocol QueuedWrite: Sendable {
    /// Runs the write inside the batch's transaction (in its own savepoint); throws to roll it back.
    func run(_ db: Database) throws
    /// Records the write's own failure (its savepoint was rolled back).
    func failed(_ error: any Error)
    /// Answers the caller once the batch committed (nil) or failed as a whole.
    func finish(batchFailure: (any Error)?)
}

// Its mutable `outcome` is touched only by the thread applying it (run, failed, then finish, in
// that order, within one drain or one inline write; an inline write's caller reads it after), so
// no two threads ever reach it at once. The value is kept as `any Sendable`, and the caller casts
// it back: `run`, `failed`, `finish` and the deinit are reached through `QueuedWrite`, where `T`
// is not known at compile time, and a `Result<T, any Error>` or a `CheckedContinuation<T, any
// Error>` would look up the metadata of those types at every step.
private final class Write<T: Sendable>: QueuedWrite, @unchecked Sendable {
    let body: @Sendable (Database) throws -> T
    /// Nil for a write applied on its caller's thread (`GroupCommitter.writeInline`), whose caller
    /// reads `outcome` itself.
    let continuation: CheckedContinuation<any Sendable, any Error>?
    var outcome: Result<any Sendable, any Error>?

    init(body: @escaping @Sendable (Database) throws -> T, continuation: CheckedContinuation<any Sendable, any Error>? = nil) {
        self.body = body
        self.continuation = continuation
    }

    /// What an inline write's caller gets once `applyAlone` returned.
    var result: Result<any Sendable, any Error> {
        outcome ?? .failure(DatabaseError(message: "an inline write did not run"))
    }

    func run(_ db: Database) throws {
        outcome = .success(try body(db))
    }

    func failed(_ error: any Error) {
        outcome = .failure(error)
    }

    func finish(batchFailure: (any Error)?) {
        guard let continuation else {
            if let batchFailure { outcome = .failure(batchFailure) }
            return
        }
        if let batchFailure {
            continuation.resume(throwing: batchFailure)
        } else if let outcome {
            continuation.resume(with: outcome)
        } else {
            continuation.resume(throwing: DatabaseError(message: "a queued write did not run"))
        }
    }
}
