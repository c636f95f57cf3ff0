import Foundation
import GRDB
import Synchronization

/// Group commit: every write of the store queues here, and the one writer connection applies
/// whatever has queued in one transaction, each write inside its own savepoint. A write that
/// fails rolls back its savepoint alone and gets its own error; the others commit together with
/// one fsync, and each caller is answered only after that commit. While one batch commits, the
/// next one queues, so under load many writes share a commit and alone a write commits at once.
final class GroupCommitter: Sendable {
    /// How many writes one transaction takes at most, so that no batch holds the writer for long.
    static let maximumBatch = 256

    private struct State {
        var pending: [any QueuedWrite] = []
        var draining = false
        var statistics = Statistics()
    }

    /// What the committer has done so far.
    struct Statistics: Hashable, Sendable {
        /// Transactions committed (or attempted).
        var batches = 0
        /// Writes applied in them.
        var writes = 0
    }

    private let writer: any DatabaseWriter
    /// The feed's hub, whose wake-ups for a batch's commit wait until the batch's writers are answered.
    private let hub: ChangeHub
    /// Reads what each commit publishes to the hub, just before the commit (`prepareCommit`).
    private let observer: ChangeObserver
    private let state = Mutex(State())

    init(writer: any DatabaseWriter, hub: ChangeHub, observer: ChangeObserver) {
        self.writer = writer
        self.hub = hub
        self.observer = observer
    }

    /// Batches and writes so far.
    var statistics: Statistics { state.withLock { $0.statistics } }

    /// Writes queued and not yet taken into a batch.
    var pendingCount: Int { state.withLock { $0.pending.count } }

    /// Runs `body` in the next batch; returns its value once the batch is durably committed.
    func write<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            let startDrain = state.withLock { state in
                state.pending.append(Write(body: body, continuation: continuation))
                defer { state.draining = true }
                return !state.draining
            }
            if startDrain {
                writer.asyncWriteWithoutTransaction { [self] db in drain(db) }
            }
        }
    }

    /// Applies batches on the writer connection until nothing is queued.
    private func drain(_ db: Database) {
        while true {
            let batch: [any QueuedWrite] = state.withLock { state in
                let batch = Array(state.pending.prefix(Self.maximumBatch))
                state.pending.removeFirst(batch.count)
                if batch.isEmpty {
                    state.draining = false
                } else {
                    state.statistics.batches += 1
                    state.statistics.writes += batch.count
                }
                return batch
            }
            if batch.isEmpty { return }
            hub.holdingWakes { apply(batch, db) }
        }
    }

    private func apply(_ batch: [any QueuedWrite], _ db: Database) {
        if batch.count == 1 {
            applyAlone(batch[0], db)
            return
        }
        do {
            try Self.inImmediateTransaction(db) {
                for write in batch {
                    do {
                        try db.inSavepoint {
                            try write.run(db)
                            return .commit
                        }
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
    /// transaction back (GRDB's `SAVEPOINT` and `RELEASE` statements, prepared anew each time, were
    /// 42k of the writer's 310k instructions for one PUT; a write that waits alone is the one whose
    /// latency shows).
    private func applyAlone(_ write: any QueuedWrite, _ db: Database) {
        var failedAlone = false
        do {
            try Self.inImmediateTransaction(db) {
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
    /// prepares both statements anew on every call (about 25k of a PUT's 606k instructions, callgrind).
    /// As GRDB's: a failure in `body` or of the `COMMIT` rolls back (when SQLite has not already) and
    /// the first error is thrown; `.rollback` rolls back.
    static func inImmediateTransaction(_ db: Database, _ body: () throws -> Database.TransactionCompletion) throws {
        try db.cachedStatement(sql: "BEGIN IMMEDIATE TRANSACTION").execute()
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
        }
        if let firstError { throw firstError }
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

// Its mutable `outcome` is touched only on the writer's serial queue (run, failed, then finish,
// in that order, within one drain), so no two threads ever reach it at once.
private final class Write<T: Sendable>: QueuedWrite, @unchecked Sendable {
    let body: @Sendable (Database) throws -> T
    let continuation: CheckedContinuation<T, any Error>
    var outcome: Result<T, any Error>?

    init(body: @escaping @Sendable (Database) throws -> T, continuation: CheckedContinuation<T, any Error>) {
        self.body = body
        self.continuation = continuation
    }

    func run(_ db: Database) throws {
        outcome = .success(try body(db))
    }

    func failed(_ error: any Error) {
        outcome = .failure(error)
    }

    func finish(batchFailure: (any Error)?) {
        if let batchFailure {
            continuation.resume(throwing: batchFailure)
        } else if let outcome {
            continuation.resume(with: outcome)
        } else {
            continuation.resume(throwing: DatabaseError(message: "a queued write did not run"))
        }
    }
}
