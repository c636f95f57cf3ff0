import Foundation
import GRDB
import StockroomCore
import StockroomStorage

extension AppDatabase {
    /// Runs `body` in one write transaction: the one path of every public write. With an idempotency
    /// key: a retry returns the stored response and applies nothing; a first run stores its decided
    /// outcome in the same transaction.
    func perform<Value: Sendable>(
        _ idempotency: IdempotentRequest<Value>?,
        _ body: @escaping @Sendable (Database) throws -> Value
    ) async throws -> Replayable<Value> {
        guard let idempotency else { return .fresh(try await write(body)) }
        try inFlight.claim(idempotency.key)
        defer { inFlight.release(idempotency.key) }
        let outcome: Replayable<Result<Value, any Error>> = try await write { db in
            let key = idempotency.key
            if let record = try IdempotencyRecord.find(db, key: key) {
                guard record.fingerprint == idempotency.fingerprint else { throw StoreError.idempotencyKeyReused }
                return .replayed(record.stored)
            }
            var result: Result<Value, any Error>
            do {
                var value: Value?
                try db.inSavepoint {
                    value = try body(db)
                    return .commit
                }
                guard let value else { throw StoreError.unavailable("the write produced no result") }
                result = .success(value)
            } catch let error as DatabaseError {
                throw error
            } catch {
                result = .failure(error)
            }
            guard let response = idempotency.render(result) else {
                if case .failure(let error) = result { throw error }
                return .fresh(result)
            }
            try IdempotencyRecord(key: key, fingerprint: idempotency.fingerprint, response: response, at: Timestamp.milliseconds(Date()))
                .insertCached(db)
            return .fresh(result)
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
