import Foundation
import PostgresNIO
import StockroomCore
import StockroomStorage

extension PostgresStore {
    /// Runs `body` in one write transaction: the one path of every public write. With an
    /// idempotency key, the transaction first takes the key's advisory lock (`try`: a request with
    /// the same key still running, on this daemon or another, is `requestInProgress`), then replays
    /// a decided request's stored response, or runs `body` in a savepoint and stores its decided
    /// outcome in the same transaction.
    func perform<Value: Sendable>(
        _ idempotency: IdempotentRequest<Value>?,
        _ body: @escaping @Sendable (PostgresWrite) async throws -> Value
    ) async throws -> Replayable<Value> {
        guard let idempotency else { return .fresh(try await write(body)) }
        let key = idempotency.key
        let outcome: Replayable<Result<Value, any Error>> = try await write { write in
            let claimed = try await write.query(
                "SELECT pg_try_advisory_xact_lock(hashtextextended(\(Self.lockName(key)), 0))"
            ).first?.decode(Bool.self) ?? false
            guard claimed else { throw StoreError.requestInProgress }
            if let record = try await write.query(
                """
                SELECT fingerprint, response FROM idempotency_records
                WHERE user_id = \(key.user.rawValue) AND scope = \(key.scope.rawValue) AND key = \(key.key)
                """
            ).first {
                let (fingerprint, response) = try record.decode((String, ByteBuffer).self)
                guard fingerprint == idempotency.fingerprint else { throw StoreError.idempotencyKeyReused }
                return .replayed(StoredResponse(bytes: Array(response.readableBytesView)))
            }
            var result: Result<Value, any Error>
            let mark = write.mark
            try await write.query("SAVEPOINT request")
            do {
                result = .success(try await body(write))
                try await write.appendLog()
                try await write.query("RELEASE SAVEPOINT request")
            } catch let error where Self.isDecided(error) {
                try await write.query("ROLLBACK TO SAVEPOINT request")
                write.discard(from: mark)
                result = .failure(error)
            }
            guard let response = idempotency.render(result) else {
                if case .failure(let error) = result { throw error }
                return .fresh(result)
            }
            try await write.query(
                """
                INSERT INTO idempotency_records (user_id, scope, key, fingerprint, response, created_at)
                VALUES (\(key.user.rawValue), \(key.scope.rawValue), \(key.key), \(idempotency.fingerprint),
                        \(ByteBuffer(bytes: response.bytes)), \(Timestamp.milliseconds(Date())))
                """)
            return .fresh(result)
        }
        switch outcome {
        case .replayed(let response): return .replayed(response)
        case .fresh(.success(let value)): return .fresh(value)
        case .fresh(.failure(let error)): throw error
        }
    }

    /// An outcome of the request itself (a refusal), which is stored and replayed, unlike a failure
    /// of storage, which fails the whole transaction.
    static func isDecided(_ error: any Error) -> Bool {
        if let error = error as? StoreError, case .unavailable = error { return false }
        return error is StoreError || error is DomainError
    }

    /// The advisory lock of a key: its user, scope and key, which `hashtextextended` turns into the
    /// lock's 64-bit number (a collision only makes a request wait for an unrelated one, or answer
    /// `requestInProgress` to it).
    static func lockName(_ key: IdempotencyKey) -> String {
        "idempotency:\(key.user.rawValue)\n\(key.scope.rawValue)\n\(key.key)"
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
