import Foundation
import PostgresNIO
import StockroomCore
import StockroomStorage

extension PostgresStore {
    /// Runs `body`, rules over the write's rows (`WriteRules`), as one write of a batch
    /// (`write`): the one path of every item and navigation write. With an idempotency key,
    /// `WriteRules.idempotent` claims it (`PostgresWrite.claim`: a transaction-scoped advisory
    /// lock, so that a request with the same key still running, on this daemon or another, is
    /// `requestInProgress`), then replays a decided request's stored answer or runs the body; a
    /// first run's value is stored once the batch's entries are numbered, in the same transaction.
    /// `position` sets the log's head after the write on a value that carries one (a command's
    /// outcome: `CommandOutcome.positioned`).
    func perform<Value: Sendable>(
        _ idempotency: IdempotentRequest<Value>?,
        plan: WritePlan? = nil,
        alone: Bool = false,
        position: (@Sendable (Value, Int64) -> Value)? = nil,
        _ body: @escaping @Sendable (PostgresWrite) async throws -> Value
    ) async throws -> Replayable<Value> {
        guard let idempotency else {
            return .fresh(try await write(plan: plan, alone: alone, body) { value, head, _ in position?(value, head) ?? value })
        }
        let outcome = try await write(plan: plan, alone: alone, idempotencyKey: idempotency.key) { write in
            try await WriteRules.idempotent(write, idempotency) { try await body(write) }
        } finish: { step, head, write in
            guard case .succeeded(let value) = step else { return step }
            let positioned = position?(value, head) ?? value
            try await WriteRules.recordSuccess(write, idempotency, positioned)
            return .succeeded(positioned)
        }
        switch outcome {
        case .replayed(let response): return .replayed(response)
        case .succeeded(let value): return .fresh(value)
        case .refused(let error): throw error
        }
    }

    @discardableResult
    public func purgeIdempotencyRecords(olderThan age: Duration) async throws -> Int {
        let age = max(age, IdempotencyKey.minimumRetention)
        let cutoff = Timestamp.milliseconds(Date()) - Int64(age.components.seconds) * 1000
        return try await write { write in
            try await write.query("DELETE FROM idempotency_records WHERE created_at < \(cutoff) RETURNING 1").count
        }
    }
}
