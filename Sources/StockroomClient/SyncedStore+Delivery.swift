import Foundation

// Delivery: the queued commands sent in order, one at a time, and their answers.

extension SyncedStore {
    enum Step {
        case delivered, idle, stop
        case retry(Duration)
    }

    /// Delivers the oldest queued command: one at a time, in order, each with its own idempotency key.
    /// A rebase put off while commands were answered one after another runs once delivery pauses.
    func deliverNext() async -> Step {
        let step = await deliverHead()
        if case .delivered = step {} else { flushRebase() }
        return step
    }

    private func deliverHead() async -> Step {
        guard let next = pendingCommands.first else { return .idle }
        do {
            let result = try await client.send(next.command, from: clientID, idempotencyKey: next.idempotencyKey)
            answered(next, with: result)
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
            // The server failed on this command: sent again a bounded number of times, then given up.
            serverErrors += 1
            guard serverErrors < options.serverErrorAttempts else {
                refused(next, with: error)
                return .delivered
            }
            deliveryAttempt += 1
            return .retry(max(options.commandBackoff.delay(attempt: deliveryAttempt), error.retryAfter ?? .zero))
        } catch {
            // No answer, or an answer that says "later" (503, 429, 409 requestInProgress): the same
            // command with the same key again, after a while or once the feed is back.
            if !(error is StockroomError) {
                try? queue.recordAttempt(next.id)
                connection = .offline(reason: Self.describe(error))
            }
            deliveryAttempt += 1
            let delay = options.commandBackoff.delay(attempt: deliveryAttempt)
            return .retry(max(delay, (error as? StockroomError)?.retryAfter ?? .zero))
        }
    }

    func answered(_ queued: QueuedCommand, with result: CommandResult) {
        deliveryAttempt = 0
        serverErrors = 0
        if case .offline = connection { connection = .online }
        try? queue.remove(queued.id)
        removePending(queued.id)
        confirm(result.navigation)
        if let item = result.item { confirmAnswered(item) }
        if let index = optimisticIndex(queued.id) {
            if case .delete(let id)? = optimistic[index].effect, queued.command == .confirmDelete {
                confirmDeletion(of: id)
            }
            optimistic.remove(at: index)
        }
        let waiting = waiters.removeValue(forKey: queued.id) ?? []
        // Whoever waits for this answer sees the state after it.
        if waiting.isEmpty { rebaseSoon() } else { rebase() }
        for waiter in waiting { waiter.resume(returning: result) }
    }

    func refused(_ queued: QueuedCommand, with error: StockroomError) {
        deliveryAttempt = 0
        serverErrors = 0
        try? queue.remove(queued.id)
        removePending(queued.id)
        if let index = optimisticIndex(queued.id) { optimistic.remove(at: index) }
        if let current = error.currentItem { confirmAnswered(current) }
        failures.append(CommandFailure(id: queued.id, command: queued.command, error: error, at: Date()))
        rebase()
        for waiter in waiters.removeValue(forKey: queued.id) ?? [] { waiter.resume(throwing: error) }
    }

    /// Takes an answered command out of `pendingCommands` (the first, as a rule: delivery is in order).
    private func removePending(_ id: QueuedCommand.ID) {
        if pendingCommands.first?.id == id { pendingCommands.removeFirst() } else { pendingCommands.removeAll { $0.id == id } }
    }

    /// Where command `id` is in `optimistic` (the first, as a rule), if it is still there.
    private func optimisticIndex(_ id: QueuedCommand.ID) -> Int? {
        optimistic.first?.queued.id == id ? 0 : optimistic.firstIndex { $0.queued.id == id }
    }

    static func describe(_ error: any Error) -> String {
        if let error = error as? TransportError { return error.message }
        return "\(error)"
    }
}
