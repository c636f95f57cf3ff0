import Foundation
import GRDB
import StockroomCore
import StockroomStorage

extension AppDatabase {
    /// Runs `body`, rules over the writer's rows (`WriteRules`), in one write transaction: the one
    /// path of every item and navigation write. With an idempotency key (claimed in this process
    /// while the request runs): `WriteRules.idempotent` replays a decided request or stores a first
    /// run's decided outcome in the same transaction. `position` sets the log's head after the
    /// write on a value that carries one (a command's outcome: `CommandOutcome.positioned`):
    /// entries are numbered as they are appended here, so the head is read at once.
    func perform<Value: Sendable>(
        _ idempotency: IdempotentRequest<Value>?,
        position: (@Sendable (Value, Int64) -> Value)? = nil,
        _ body: @escaping @Sendable (SQLiteWriteRows) async throws -> Value
    ) async throws -> Replayable<Value> {
        // Each way in a function of its own, so that the async frame a write allocates holds one way's values.
        guard let idempotency else { return .fresh(try await performOnce(position: position, body)) }
        return try await performIdempotent(idempotency, position: position, body)
    }

    private func performOnce<Value: Sendable>(
        position: (@Sendable (Value, Int64) -> Value)?, _ body: @escaping @Sendable (SQLiteWriteRows) async throws -> Value
    ) async throws -> Value {
        guard let position else { return try await write { [observer] db in try SQLiteWriteRows.run(db, observer: observer, body) } }
        return try await write { [observer] db in
            try SQLiteWriteRows.run(db, observer: observer) { rows in try Self.positioned(try await body(rows), position, rows) }
        }
    }

    private func performIdempotent<Value: Sendable>(
        _ idempotency: IdempotentRequest<Value>, position: (@Sendable (Value, Int64) -> Value)?,
        _ body: @escaping @Sendable (SQLiteWriteRows) async throws -> Value
    ) async throws -> Replayable<Value> {
        try inFlight.claim(idempotency.key)
        defer { inFlight.release(idempotency.key) }
        let outcome = try await write { [observer] db in
            try SQLiteWriteRows.run(db, observer: observer) { rows -> IdempotentStep<Value> in
                let step = try await WriteRules.idempotent(rows, idempotency) { try await body(rows) }
                guard case .succeeded(let value) = step else { return step }
                let positioned = try Self.positioned(value, position, rows)
                try await WriteRules.recordSuccess(rows, idempotency, positioned)
                return .succeeded(positioned)
            }
        }
        switch outcome {
        case .replayed(let response): return .replayed(response)
        case .succeeded(let value): return .fresh(value)
        case .refused(let error): throw error
        }
    }

    /// `value` positioned by `position` at the log's head, when given.
    static func positioned<Value>(_ value: Value, _ position: ((Value, Int64) -> Value)?, _ rows: SQLiteWriteRows) throws -> Value {
        guard let position else { return value }
        return position(value, try rows.logHead())
    }

    /// Deletes idempotency records older than `age` (at least 24 hours); returns how many.
    @discardableResult
    public func purgeIdempotencyRecords(olderThan age: Duration) async throws -> Int {
        let age = max(age, IdempotencyKey.minimumRetention)
        let cutoff = Timestamp.milliseconds(Date()) - Int64(age.components.seconds) * 1000
        return try await write { db in
            try IdempotencyRecord.filter(IdempotencyRecord.Columns.createdAt < cutoff).deleteAll(db)
        }
    }
}
