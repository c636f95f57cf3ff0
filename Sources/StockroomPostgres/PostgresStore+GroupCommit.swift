import PostgresNIO
import StockroomCore
import StockroomStorage

// The write path: each write joins the daemon's next batch (`PostgresCommitter`), and a batch
// commits in one transaction with one head step.

extension PostgresStore {
    /// Runs `body` in the next batch of this daemon's group commit (`PostgresCommitter`, `apply`)
    /// and returns its value once the batch committed and its change entries were published. A
    /// deadlock (40P01), a serialization failure (40001) or a state that changed under it
    /// (`WriteRetry`) runs it again in a later batch, in up to `attempts` batches; storage failures are
    /// `unavailable`.
    func write<Value: Sendable>(
        plan: WritePlan? = nil, _ body: @escaping @Sendable (PostgresWrite) async throws -> Value
    ) async throws -> Value {
        try await write(plan: plan, body) { value, _, _ in value }
    }

    /// `write`, with `finish` completing the value once the batch's entries are numbered (`head`:
    /// the log's head after this write's entries), still inside the transaction.
    /// `plan`: what `body` will read or write first, which a batch does for several such writes
    /// at once (`answeringAhead`).
    func write<Value: Sendable>(
        plan: WritePlan? = nil,
        alone: Bool = false,
        idempotencyKey: IdempotencyKey? = nil,
        _ body: @escaping @Sendable (PostgresWrite) async throws -> Value,
        finish: @escaping @Sendable (Value, Int64, PostgresWrite) async throws -> Value
    ) async throws -> Value {
        let job = PostgresJob(body: body, finish: finish, plan: plan, alone: alone, idempotencyKey: idempotencyKey)
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
        /// The transaction appended more entries than the hub keeps: `entries` are the last ones.
        var beyondMemory = false
    }

    /// Applies one batch in one transaction (`PostgresCommitter`), answers its writes, and returns
    /// those to run again. The batch runs first together, without savepoints (each costs two
    /// statements per write): when every write succeeds, as most do, that is the batch. When one
    /// of several fails, the transaction is rolled back and the batch runs again, each write in its
    /// own savepoint. A write alone needs none: its failure is the transaction's.
    func apply(_ batch: [any PostgresQueuedWrite]) async -> [any PostgresQueuedWrite] {
        for job in batch { job.enterBatch() }
        do {
            return await answer(try await transaction(of: batch) { try await self.applyTogether(batch, $0) })
        } catch is OneWriteFailed {
            committer.countBatchRunAgain()
        } catch {
            if batch.count == 1, Self.isRetryable(error), batch[0].batches < Self.attempts { return batch }
            fail(batch, error)
            return []
        }
        do {
            return await answer(try await transaction(of: batch) { try await self.applyInSavepoints(batch, $0) })
        } catch {
            fail(batch, error)
            return []
        }
    }

    /// Runs `body`, `batch`'s work, in one transaction on a pooled connection, whatever happens to
    /// the task that runs it (`leased(cancellable: false)`): within `answerBound`, but for a write
    /// that runs alone (an import, whose many statements may take minutes).
    private func transaction(
        of batch: [any PostgresQueuedWrite], _ body: @escaping @Sendable (PostgresWrite) async throws -> BatchOutcome
    ) async throws -> BatchOutcome {
        let bound = batch.contains(where: \.alone) ? nil : answerBound
        return try await leased(bound: bound, writes: true, cancellable: false) { connection in
            try await Self.transaction(on: connection, logger: self.logger) { connection in
                try await body(PostgresWrite(connection: connection, logger: self.logger, epoch: self.epoch, sender: self.sender))
            }
        }
    }

    /// Publishes a committed batch's entries, then answers its writes; returns those to run again.
    ///
    /// The entries are readable at once, but the subscribers they concern are woken only after the
    /// answers are on their way (`ChangeHub.holdWakes`): the release is a task of its own, which an
    /// event loop runs after the job that answers, so the answers' socket writes queue ahead of the
    /// subscribers' (a batch runs on an event loop, and wakes them there; run first, a thousand of
    /// them would delay the answer of the write they are told about).
    private func answer(_ outcome: BatchOutcome) async -> [any PostgresQueuedWrite] {
        hub.holdWakes()
        if outcome.beyondMemory {
            hub.committed(tail: outcome.entries)
        } else if !outcome.entries.isEmpty {
            await publish(outcome.entries)
        }
        for write in outcome.applied { write.succeed() }
        for (write, error) in outcome.refused { write.fail(error) }
        Task { [hub] in hub.releaseWakes() }
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
        for job in try await answeringAhead(batch, write) {
            do {
                write.running = ObjectIdentifier(job)
                try await job.run(write)
                // A body that did not ask for the write run for it ahead: run the batch again without.
                if write.answeredAhead[ObjectIdentifier(job)] != nil { throw PlannedUpdate.NotAsked() }
            } catch {
                if batch.count == 1 || write.connection.isClosed || Self.isConnectionGone(error) { throw error }
                throw OneWriteFailed()
            }
            applied.append((job, write.entryCount))
        }
        do {
            try await write.flushSaves()
        } catch {
            if write.connection.isClosed || Self.isConnectionGone(error) { throw error }
            throw OneWriteFailed()
        }
        return try await finish(applied, write, outcome: BatchOutcome())
    }

    /// The batch in the order it runs, with what its writes will do first done for several at
    /// once (`WritePlan`). When two or more are planned item updates (one per item), their updates
    /// run ahead in one statement (`PostgresWrite.updateLiveItems`) and those writes run first,
    /// then the others in their order: any order of a batch's writes is an order they could have
    /// come in, and the log records the one they ran in. When two or more are commands of
    /// different devices, the devices' rows and the items they look up are read ahead
    /// (`PostgresWrite.readAhead`). When two or more carry an idempotency key, their keys are
    /// claimed and their stored answers read first (`PostgresWrite.claimAhead`), and a keyed item
    /// write is planned only when it claimed its key and has no stored answer: a replay, or a
    /// request still running elsewhere, writes nothing. A failure here runs the batch again with
    /// savepoints, where nothing is done ahead.
    private func answeringAhead(_ batch: [any PostgresQueuedWrite], _ write: PostgresWrite) async throws -> [any PostgresQueuedWrite] {
        var fresh = Set<ObjectIdentifier>()
        let keyed = batch.filter { $0.idempotencyKey != nil }
        if keyed.count > 1 {
            do {
                fresh = try await write.claimAhead(keyed)
            } catch {
                if write.connection.isClosed || Self.isConnectionGone(error) { throw error }
                throw OneWriteFailed()
            }
        }
        var updates: [(write: ObjectIdentifier, update: PlannedUpdate)] = []
        var inserts: [(write: ObjectIdentifier, insert: PlannedInsert)] = []
        var commands: [(command: Command, clientID: ClientID)] = []
        var first: [any PostgresQueuedWrite] = []
        var rest: [any PostgresQueuedWrite] = []
        var items = Set<ItemID>()
        var clients = Set<ClientID>()
        for job in batch {
            let writesAhead = job.idempotencyKey == nil || fresh.contains(ObjectIdentifier(job))
            switch job.plan {
            case .update(let plan)? where writesAhead && items.insert(plan.id).inserted:
                updates.append((ObjectIdentifier(job), plan))
                first.append(job)
                continue
            case .insert(let plan)? where writesAhead && items.insert(plan.id).inserted:
                inserts.append((ObjectIdentifier(job), plan))
                first.append(job)
                continue
            case .command(let command, let clientID)? where clients.insert(clientID).inserted:
                commands.append((command, clientID))
            default:
                break
            }
            rest.append(job)
        }
        let updateAhead = updates.count > 1
        let insertAhead = inserts.count > 1
        let readAhead = commands.count > 1
        guard updateAhead || insertAhead || readAhead else { return batch }
        do {
            // The item writes first: the commands' reads then see them.
            if updateAhead { try await write.updateLiveItems(updates) }
            if insertAhead { try await write.insertItems(inserts) }
            if readAhead { try await write.readAhead(commands) }
        } catch {
            if write.connection.isClosed || Self.isConnectionGone(error) { throw error }
            throw OneWriteFailed()
        }
        committer.countAhead(
            updates: (updateAhead ? updates.count : 0) + (insertAhead ? inserts.count : 0), commands: readAhead ? commands.count : 0)
        return updateAhead || insertAhead ? first + rest : batch
    }

    /// One head step for the applied writes' entries, then each one's finish (`head`: the log's
    /// head after its entries).
    private func finish(
        _ applied: [(write: any PostgresQueuedWrite, entries: Int)], _ write: PostgresWrite, outcome: BatchOutcome
    ) async throws -> BatchOutcome {
        var outcome = outcome
        let head = try await write.appendLog()
        // One transaction's entries have contiguous seqs: its first head step holds the row to the end.
        let before = write.firstSeq.map { $0 - 1 } ?? head
        for (job, entries) in applied {
            try await job.finish(write, head: before + Int64(entries))
        }
        try await write.flushRecords()
        outcome.applied = applied.map(\.write)
        outcome.entries = write.appended
        outcome.beyondMemory = write.dropped > 0
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
                if Self.isRetryable(error), job.batches < Self.attempts {
                    outcome.again.append(job)
                } else {
                    outcome.refused.append((job, Self.mapped(error)))
                }
            }
        }
        return try await finish(applied, write, outcome: outcome)
    }
}
