@testable import StockroomPostgres
import StockroomStorage
import Synchronization
import TestSupport
import Testing

/// The committer's drain between batches (`PostgresCommitter.gather`): after a batch of several
/// writes it waits for as many to queue before the next, within its wait, and a lone write never
/// waits. No database: the drain given to the committer only records each batch's size.
@Suite("PostgreSQL: a drain gathers the writers of its last batch")
struct PostgresCommitterGatherTests {
    /// A queued write with nothing to run: the drain below never runs it.
    final class Write: PostgresQueuedWrite {
        let batches = 0
        let plan: WritePlan? = nil
        let alone = false
        let idempotencyKey: IdempotencyKey? = nil
        func enterBatch() {}
        func run(_ write: PostgresWrite) async throws {}
        func finish(_ write: PostgresWrite, head: Int64) async throws {}
        func succeed() {}
        func fail(_ error: any Error) {}
    }

    /// Batch sizes in the order the committer drained them.
    final class Batches: Sendable {
        private let sizes = Mutex<[Int]>([])
        var all: [Int] { sizes.withLock { $0 } }
        func record(_ size: Int) { sizes.withLock { $0.append(size) } }
    }

    /// Queues `count` writes behind a first one held in its batch, then lets them go: batches of 1
    /// (the held write, run by its own caller) and `count`.
    static func batchOfMany(_ committer: PostgresCommitter, _ count: Int, _ batches: Batches) async throws {
        let release = Gate()
        #expect(committer.enqueue(Write()))
        let first = Task {
            await committer.drainOnce { batch in
                if batches.all.isEmpty { await release.wait() }
                batches.record(batch.count)
                return []
            }
        }
        try await eventually("the first write's batch runs") { committer.pendingCount == 0 }
        for _ in 0..<count { #expect(!committer.enqueue(Write())) }
        release.open()
        await first.value
        try await eventually("the queued writes run as one batch") { batches.all == [1, count] }
    }

    @Test(.timeLimit(.minutes(10)))
    func afterABatchOfFourTheNextWaitsForFourWrites() async throws {
        // A wait far longer than the test: only the fourth write can end it.
        let committer = PostgresCommitter(gatherWait: .seconds(600))
        let batches = Batches()
        try await Self.batchOfMany(committer, 4, batches)
        for _ in 0..<3 {
            #expect(!committer.enqueue(Write()))
            // Time for a drain that did not wait to take what is queued.
            try await Task.sleep(for: .milliseconds(50))
            #expect(batches.all == [1, 4])
        }
        #expect(!committer.enqueue(Write()))
        try await eventually("the four writes run as one batch") { batches.all == [1, 4, 4] }
        #expect(committer.pendingCount == 0)
    }

    @Test(.timeLimit(.minutes(10)))
    func aWriteAfterABatchOfManyRunsOnceTheWaitEnds() async throws {
        let committer = PostgresCommitter(gatherWait: .milliseconds(200))
        let batches = Batches()
        try await Self.batchOfMany(committer, 6, batches)
        // The drain waits for six writes (unless the wait is over already: the write then finds no
        // drain and its caller runs it, as the store does); this one runs once the wait ends.
        if committer.enqueue(Write()) {
            await committer.drainOnce { batch in
                batches.record(batch.count)
                return []
            }
        }
        try await eventually("the lone write runs") { batches.all == [1, 6, 1] }
    }
}
