import Foundation
import GRDB
import StockroomCore
import StockroomStorage

extension AppDatabase {
    /// Runs `body`, rules over the writer's rows (`WriteRules`), in one write transaction: the one
    /// path of every item and navigation write. With an idempotency key (claimed in this process
    /// while the request runs): `WriteRules.idempotent` replays a decided request or stores a first
    /// run's decided outcome in the same transaction.
    func perform<Value: Sendable>(
        _ idempotency: IdempotentRequest<Value>?,
        _ body: @escaping @Sendable (SQLiteWriteRows) async throws -> Value
    ) async throws -> Replayable<Value> {
        guard let idempotency else {
            return .fresh(try await write { db in try SQLiteWriteRows.run(db, body) })
        }
        try inFlight.claim(idempotency.key)
        defer { inFlight.release(idempotency.key) }
        let outcome = try await write { db in
            try SQLiteWriteRows.run(db) { rows in try await WriteRules.idempotent(rows, idempotency) { try await body(rows) } }
        }
        switch outcome {
        case .replayed(let response): return .replayed(response)
        case .fresh(.success(let value)): return .fresh(value)
        case .fresh(.failure(let error)): throw error
        }
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
