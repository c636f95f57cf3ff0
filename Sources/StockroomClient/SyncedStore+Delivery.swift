import Foundation

// Delivery: the queued commands sent in order, one at a time, and their answers.

extension SyncedStore {
    enum Step {
        case delivered, idle, stop
        case retry(Duration)
    }

    /// Delivers the oldest queued command: one at a time, in order, each with its own idempotency key.
    func deliverNext() async -> Step {
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
        pendingCommands.removeAll { $0.id == queued.id }
        confirm(result.navigation)
        if let item = result.item { confirmAnswered(item) }
        if let index = optimistic.firstIndex(where: { $0.queued.id == queued.id }) {
            if case .delete(let id)? = optimistic[index].effect, queued.command == .confirmDelete {
                confirmDeletion(of: id)
            }
            optimistic.remove(at: index)
        }
        rebase()
        for waiter in waiters.removeValue(forKey: queued.id) ?? [] { waiter.resume(returning: result) }
    }

    func refused(_ queued: QueuedCommand, with error: StockroomError) {
        deliveryAttempt = 0
        serverErrors = 0
        try? queue.remove(queued.id)
        pendingCommands.removeAll { $0.id == queued.id }
        optimistic.removeAll { $0.queued.id == queued.id }
        if let current = error.currentItem { confirmAnswered(current) }
        failures.append(CommandFailure(id: queued.id, command: queued.command, error: error, at: Date()))
        rebase()
        for waiter in waiters.removeValue(forKey: queued.id) ?? [] { waiter.resume(throwing: error) }
    }

    static func describe(_ error: any Error) -> String {
        if let error = error as? TransportError { return error.message }
        return "\(error)"
    }
}
