import Foundation
import Logging
import NIOCore
import PostgresNIO
import StockroomStorage
import Synchronization

/// Group commit on PostgreSQL: every write of a daemon queues here, and one transaction at a time
/// applies whatever has queued, each write inside its own savepoint, then numbers all their change
/// entries with one step of `log_head` (`PostgresWrite.appendLog`) and commits. The head row,
/// which every daemon's writes share, is held for that one step and the COMMIT per batch instead
/// of per write, so the cluster commits many writes per head step.
///
/// A batch first runs its writes one after another without savepoints; when one of them fails,
/// the transaction is rolled back and the batch runs again with a savepoint for each write (each
/// costs two statements, so the common batch, where every write succeeds, goes without). There a
/// write refused (a `StoreError`, a domain refusal) or failing on its own (a statement error)
/// rolls back its savepoint alone and gets its own error; one that met a deadlock, a
/// serialization failure or a state that moved under it (`WriteRetry`) rolls back alone and runs
/// again in a later batch (in at most `PostgresStore.attempts` batches). A failure of the transaction
/// itself (the connection, BEGIN, the head step, COMMIT) answers every write of the batch with
/// that error, and none is applied. Each write is answered only after its batch committed, and
/// its entries are published to the hub first. Between two batches of several writes, a drain
/// waits a little for the writers it just answered (`gather`).
final class PostgresCommitter: Sendable {
    /// How many writes one transaction takes at most: PostgreSQL keeps the ids of 64
    /// subtransactions per transaction in shared memory, and more make every other snapshot slower.
    static let maximumBatch = 48

    private struct State {
        var pending: [any PostgresQueuedWrite] = []
        var draining = false
        var statistics = Statistics()
        /// How many writes the last batch took (`gather`).
        var lastBatch = 0
        /// The drain waiting in `gather` for writes, the number of that wait, and its deadline.
        var gatherer: CheckedContinuation<Void, Never>?
        var gathering = 0
        var gatherDeadline: Scheduled<Void>?
    }

    /// What the committer has done so far.
    struct Statistics: Hashable, Sendable {
        /// Transactions committed or attempted.
        var batches = 0
        /// Writes run in them (a retried write counts once per run).
        var writes = 0
        /// Writes run again after a deadlock, a serialization failure or a moved state.
        var retries = 0
        /// The most writes one batch took.
        var largestBatch = 0
        /// Batches run again with savepoints because a write failed in them.
        var runAgainWithSavepoints = 0
        /// Item updates and inserts run ahead of their writes, several in one statement (`PlannedUpdate`, `PlannedInsert`).
        var itemWritesAhead = 0
        /// Commands whose device and items were read ahead, several in one statement (`readAhead`).
        var commandsReadAhead = 0
    }

    private let state = Mutex(State())

    var statistics: Statistics { state.withLock { $0.statistics } }

    /// Writes queued and not yet taken into a batch.
    var pendingCount: Int { state.withLock { $0.pending.count } }

    /// Queues `job`; true when no drain runs, and the caller is to run the next batch itself
    /// (`drainOnce`): a lone write then runs in its own request's task, without a hop to another.
    func enqueue(_ job: any PostgresQueuedWrite) -> Bool {
        let (runs, gathered) = state.withLock { state in
            state.pending.append(job)
            defer { state.draining = true }
            return (!state.draining, state.gatherer != nil && state.pending.count >= state.lastBatch)
        }
        if gathered { endGathering(nil) }
        return runs
    }

    /// Runs the next batch (which holds the caller's write) with `drain`, the store's batch
    /// runner; when more writes queued meanwhile, leaves them to a drain task of their own, so
    /// that the caller is answered now.
    func drainOnce(_ drain: @escaping @Sendable ([any PostgresQueuedWrite]) async -> [any PostgresQueuedWrite]) async {
        if let batch = nextBatch() {
            requeue(await drain(batch))
        }
        let more = state.withLock { state in
            if state.pending.isEmpty { state.draining = false }
            return state.draining
        }
        guard more else { return }
        Task {
            while true {
                await self.gather()
                guard let batch = self.nextBatch() else { return }
                self.requeue(await drain(batch))
            }
        }
    }

    /// How long a drain waits at most for the writers of its last batch to come back (`gather`).
    let gatherWait: Duration
    /// Where a wait's deadline is kept: a timer of an event loop, cancelled when the writes come first.
    private let loops: any EventLoopGroup

    init(gatherWait: Duration = .milliseconds(2), loops: any EventLoopGroup = PostgresClient.defaultEventLoopGroup) {
        self.gatherWait = gatherWait
        self.loops = loops
    }

    /// Before a drain's next batch: when its last batch took several writes and fewer are queued
    /// now, waits until as many are queued as that batch took, or `gatherWait` has passed. Under
    /// load the writers just answered are about to send their next writes, and a batch costs
    /// PostgreSQL and the daemon about the same whether it holds one write or ten (BEGIN, the item
    /// writes, the head step and the COMMIT, each a round trip; PostgreSQL readies each statement
    /// and flushes the WAL once per batch): the wait turns many small batches into fewer large
    /// ones. A lone write never waits: it finds no drain and runs its own batch (`drainOnce`).
    private func gather() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let generation: Int? = state.withLock { state in
                guard state.lastBatch > 1, state.pending.count < state.lastBatch else { return nil }
                state.gathering += 1
                state.gatherer = continuation
                return state.gathering
            }
            guard let generation else {
                continuation.resume()
                return
            }
            // The deadline is a timer on an event loop (the calling one when it is one), which the
            // writes cancel when they come first; it is kept only while its wait still waits.
            let deadline = loops.any().scheduleTask(in: TimeAmount(gatherWait)) {
                self.endGathering(generation)
            }
            let ended = state.withLock { state in
                guard state.gathering == generation, state.gatherer != nil else { return true }
                state.gatherDeadline = deadline
                return false
            }
            if ended { deadline.cancel() }
        }
    }

    /// Resumes the drain waiting in `gather` (`generation`: only the wait of that number; nil: any).
    private func endGathering(_ generation: Int?) {
        let (waiter, deadline) = state.withLock { state -> (CheckedContinuation<Void, Never>?, Scheduled<Void>?) in
            guard generation == nil || generation == state.gathering else { return (nil, nil) }
            defer {
                state.gatherer = nil
                state.gatherDeadline = nil
            }
            return (state.gatherer, state.gatherDeadline)
        }
        deadline?.cancel()
        waiter?.resume()
    }

    /// The next batch, or nil (and the drain ends) when nothing is queued.
    private func nextBatch() -> [any PostgresQueuedWrite]? {
        state.withLock { state in
            guard !state.pending.isEmpty else {
                state.draining = false
                return nil
            }
            // A write that runs alone (an import) ends the batch before it, or is the batch.
            var count = 0
            for job in state.pending.prefix(Self.maximumBatch) {
                if job.alone {
                    if count == 0 { count = 1 }
                    break
                }
                count += 1
            }
            let batch = Array(state.pending.prefix(count))
            state.pending.removeFirst(batch.count)
            state.statistics.batches += 1
            state.statistics.writes += batch.count
            state.statistics.largestBatch = max(state.statistics.largestBatch, batch.count)
            state.lastBatch = batch.count
            return batch
        }
    }

    /// Counts item writes run ahead, and commands read ahead.
    func countAhead(updates: Int, commands: Int) {
        state.withLock {
            $0.statistics.itemWritesAhead += updates
            $0.statistics.commandsReadAhead += commands
        }
    }

    /// Counts a batch run again with savepoints.
    func countBatchRunAgain() {
        state.withLock { $0.statistics.runAgainWithSavepoints += 1 }
    }

    /// Puts writes to run again at the front of the queue, for the next batch.
    private func requeue(_ writes: [any PostgresQueuedWrite]) {
        guard !writes.isEmpty else { return }
        state.withLock { state in
            state.pending.insert(contentsOf: writes, at: 0)
            state.statistics.retries += writes.count
        }
    }
}

/// One write waiting in the committer: its body, run in a batch's transaction, then its finish
/// once the batch's entries are numbered, and its caller, answered after the commit. Used by one
/// drain at a time.
protocol PostgresQueuedWrite: AnyObject, Sendable {
    /// How many batches it has run in (`enterBatch`): one, and one more for each batch it failed
    /// in with a retryable failure of its own. A batch that runs it twice (first without
    /// savepoints, then with them, because one of its writes failed) counts once.
    var batches: Int { get }
    /// What its body will read or write first, when known before it runs (`WritePlan`).
    var plan: WritePlan? { get }
    /// Runs in a batch of its own (an import: many rows, rolled back whole).
    var alone: Bool { get }
    /// The request's idempotency key, claimed with the batch's others ahead (`PostgresWrite.claimAhead`).
    var idempotencyKey: IdempotencyKey? { get }
    /// Counts a batch it is about to run in (`batches`), before the batch's first run.
    func enterBatch()
    /// Runs the body inside the batch's transaction (in its own savepoint); throws to roll it back.
    func run(_ write: PostgresWrite) async throws
    /// Completes the value once the batch's entries are numbered: `head` is the log's head after
    /// this write's entries. Throws only for a failure of the transaction.
    func finish(_ write: PostgresWrite, head: Int64) async throws
    /// Answers the caller with the value (after the commit).
    func succeed()
    /// Answers the caller with `error`.
    func fail(_ error: any Error)
}

final class PostgresJob<Value: Sendable>: PostgresQueuedWrite, @unchecked Sendable {
    // @unchecked: `value` and `batches` are touched by the one drain that holds the job, one step
    // after another; the answer is behind `answer`'s lock.
    private let body: @Sendable (PostgresWrite) async throws -> Value
    private let finisher: @Sendable (Value, Int64, PostgresWrite) async throws -> Value
    private var value: Value?
    private(set) var batches = 0
    let plan: WritePlan?
    let alone: Bool
    let idempotencyKey: IdempotencyKey?
    private let answer = JobAnswer()

    init(
        body: @escaping @Sendable (PostgresWrite) async throws -> Value,
        finish: @escaping @Sendable (Value, Int64, PostgresWrite) async throws -> Value,
        plan: WritePlan? = nil,
        alone: Bool = false,
        idempotencyKey: IdempotencyKey? = nil
    ) {
        self.body = body
        self.finisher = finish
        self.plan = plan
        self.alone = alone
        self.idempotencyKey = idempotencyKey
    }

    func enterBatch() {
        batches += 1
    }

    func run(_ write: PostgresWrite) async throws {
        value = nil
        value = try await body(write)
    }

    func finish(_ write: PostgresWrite, head: Int64) async throws {
        guard let value else { return }
        self.value = try await finisher(value, head, write)
    }

    func succeed() {
        guard let value else { return answer.settle(.failure(StoreError.unavailable("the write produced no result"))) }
        answer.settle(.success(value))
    }

    func fail(_ error: any Error) {
        answer.settle(.failure(error))
    }

    /// The write's answer, once its batch has committed (or failed). A write whose caller ran its
    /// batch (`PostgresCommitter.drainOnce`) is answered already: its caller goes on at once, ahead
    /// of the streams its batch woke, instead of suspending and queueing behind them.
    func wait() async throws -> Value {
        // Only `succeed` settles a success, and with a `Value`.
        guard let value = try await answer.wait() as? Value else { throw StoreError.unavailable("the write produced no result") }
        return value
    }
}

/// A job's answer, its value held as `any Sendable`. `PostgresJob`'s `succeed`, `fail` and
/// deinit are reached through `PostgresQueuedWrite`, where the job's `Value` is not known at
/// compile time: kept as `Result<Value, any Error>` and `CheckedContinuation<Value, any Error>`,
/// the answer would look up the metadata of those types at every step.
final class JobAnswer: Sendable {
    private let state = Mutex<(result: Result<any Sendable, any Error>?, waiter: CheckedContinuation<any Sendable, any Error>?)>((nil, nil))

    func wait() async throws -> any Sendable {
        if let settled = state.withLock({ $0.result }) { return try settled.get() }
        return try await withCheckedThrowingContinuation { continuation in
            let settled: Result<any Sendable, any Error>? = state.withLock { state in
                if state.result == nil { state.waiter = continuation }
                return state.result
            }
            if let settled { continuation.resume(with: settled) }
        }
    }

    func settle(_ result: Result<any Sendable, any Error>) {
        let waiter = state.withLock { state in
            state.result = result
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(with: result)
    }
}
