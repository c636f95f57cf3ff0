import Foundation

// Delivery: the queued writes sent in order, one at a time, and their answers.

/// The server's answer to a queued write.
enum WriteAnswer {
    /// A command's result.
    case command(CommandResult)
    /// An item write's: the item as written, nil for a delete.
    case item(Item?)
}

extension SyncedStore {
    enum Step {
        case delivered, idle, stop
        case retry(Duration)
    }

    /// Delivers the oldest queued write: one at a time, in order, each with its own idempotency key.
    /// A rebase put off while writes were answered one after another runs once delivery pauses.
    func deliverNext() async -> Step {
        let step = await deliverHead()
        if case .delivered = step {} else { flushRebase() }
        return step
    }

    private func deliverHead() async -> Step {
        guard let next = pendingWrites.first else { return .idle }
        do {
            answered(next, with: try await send(next))
            return .delivered
        } catch let error as StockroomError where error.isRefusal {
            refused(next, with: error)
            return .delivered
        } catch let error as StockroomError where error.code == .unauthorized {
            connection = .failed(error)
            return .stop
        } catch is CancellationError {
            return .stop
        } catch let error as StockroomError where error.isServerError {
            // The server failed on this write: sent again a bounded number of times, then given up.
            serverErrors += 1
            guard serverErrors < options.serverErrorAttempts else {
                refused(next, with: error)
                return .delivered
            }
            deliveryAttempt += 1
            return .retry(options.writeBackoff.delay(attempt: deliveryAttempt, after: error))
        } catch {
            // No answer, or an answer that says "later" (503, 429, 409 requestInProgress): the same
            // write with the same key again, after a while or once the feed is back.
            if !(error is StockroomError) {
                try? queue.recordAttempt(next.id)
                connection = .offline(reason: Self.describe(error))
            }
            deliveryAttempt += 1
            return .retry(options.writeBackoff.delay(attempt: deliveryAttempt, after: error))
        }
    }

    /// Sends one queued write with its idempotency key.
    private func send(_ queued: QueuedWrite) async throws -> WriteAnswer {
        let key = queued.idempotencyKey
        switch queued.write {
        case .command(let command):
            return .command(try await client.send(command, from: clientID, idempotencyKey: key))
        case .createItem(let id, let draft):
            return .item(try await client.createItem(draft, id: id, idempotencyKey: key))
        case .updateItem(let id, let draft, let ifVersion):
            return .item(try await client.updateItem(id, with: draft, ifVersion: ifVersion, idempotencyKey: key))
        case .deleteItem(let id, let ifVersion):
            try await client.deleteItem(id, ifVersion: ifVersion, idempotencyKey: key)
            return .item(nil)
        }
    }

    func answered(_ queued: QueuedWrite, with answer: WriteAnswer) {
        deliveryAttempt = 0
        serverErrors = 0
        if case .offline = connection { connection = .online }
        try? queue.remove(queued.id)
        removePending(queued.id)
        switch answer {
        case .command(let result):
            confirm(result.navigation)
            if let item = result.item { confirmAnswered(item) }
        case .item(let item?):
            confirmAnswered(item)
        case .item(nil):
            if let id = queued.write.itemID { confirmDeletion(of: id) }
        }
        if let index = optimisticIndex(queued.id) {
            if case .delete(let id)? = optimistic[index].effect, queued.command == .confirmDelete {
                confirmDeletion(of: id)
            }
            optimistic.remove(at: index)
        }
        let waiting = waiters.removeValue(forKey: queued.id) ?? []
        // Whoever waits for this answer sees the state after it.
        if waiting.isEmpty { rebaseSoon() } else { rebase() }
        for waiter in waiting { waiter.continuation.resume(returning: answer) }
    }

    func refused(_ queued: QueuedWrite, with error: StockroomError) {
        deliveryAttempt = 0
        serverErrors = 0
        try? queue.remove(queued.id)
        removePending(queued.id)
        if let index = optimisticIndex(queued.id) { optimistic.remove(at: index) }
        if let current = error.currentItem { confirmAnswered(current) }
        failedWrites.append(WriteFailure(id: queued.id, write: queued.write, error: error, at: Date()))
        rebase()
        for waiter in waiters.removeValue(forKey: queued.id) ?? [] { waiter.continuation.resume(throwing: error) }
    }

    /// Takes an answered write out of `pendingWrites` (the first, as a rule: delivery is in order).
    private func removePending(_ id: QueuedWrite.ID) {
        if pendingWrites.first?.id == id { pendingWrites.removeFirst() } else { pendingWrites.removeAll { $0.id == id } }
    }

    /// Where write `id` is in `optimistic` (the first, as a rule), if it is still there.
    private func optimisticIndex(_ id: QueuedWrite.ID) -> Int? {
        optimistic.first?.queued.id == id ? 0 : optimistic.firstIndex { $0.queued.id == id }
    }

    static func describe(_ error: any Error) -> String {
        if let error = error as? TransportError { return error.message }
        return "\(error)"
    }
}
