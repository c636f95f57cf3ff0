import Foundation
import GRDB
import StockroomCore

/// Where an Idempotency-Key lives: per user, and per client for commands.
public struct IdempotencyKey: Hashable, Sendable {
    /// The user whose token sent the request.
    public var user: UserID
    /// Item writes, or one client's commands.
    public var scope: IdempotencyScope
    /// The header's value.
    public var key: String

    /// Creates a key.
    public init(user: UserID, scope: IdempotencyScope, key: String) {
        self.user = user
        self.scope = scope
        self.key = key
    }
}

/// A decided response kept for retries of the same request.
public struct StoredResponse: Hashable, Sendable {
    /// HTTP status.
    public var status: Int
    /// Response headers worth replaying (ETag, Location, Content-Type).
    public var headers: [String: String]
    /// Response body.
    public var body: Data

    /// Creates a stored response.
    public init(status: Int, headers: [String: String], body: Data) {
        self.status = status
        self.headers = headers
        self.body = body
    }
}

/// A request carrying an Idempotency-Key, and how to render its outcome for storage.
public struct IdempotentRequest<Value: Sendable>: Sendable {
    /// The key and its scope.
    public var key: IdempotencyKey
    /// Identifies the request (method, path, canonical body); a reuse with another fingerprint is refused.
    public var fingerprint: String
    /// Renders an outcome as the response to store, or nil for outcomes that are not stored.
    public var render: @Sendable (Result<Value, any Error>) -> StoredResponse?

    /// Creates an idempotent request.
    public init(key: IdempotencyKey, fingerprint: String, render: @escaping @Sendable (Result<Value, any Error>) -> StoredResponse?) {
        self.key = key
        self.fingerprint = fingerprint
        self.render = render
    }
}

/// Either the outcome of running a request now, or the stored response of its first run.
public enum Replayable<Value: Sendable>: Sendable {
    /// The request ran now (always so without an idempotency key).
    case fresh(Value)
    /// A retry: the first run's stored response, and nothing applied.
    case replayed(StoredResponse)

    /// The value of a fresh run. Only a write with an idempotency key can be a replay, which has no
    /// value but the stored response: reading it throws `ReplayedResponse`.
    public var value: Value {
        get throws {
            switch self {
            case .fresh(let value): return value
            case .replayed(let response): throw ReplayedResponse(response: response)
            }
        }
    }
}

/// Thrown when a replay is asked for the value of a fresh run (`Replayable.value`).
public struct ReplayedResponse: Error, Sendable {
    /// The first run's stored response.
    public var response: StoredResponse
}

extension AppDatabase {
    /// How long idempotency records are kept at least.
    public static let minimumIdempotencyRetention: Duration = .seconds(24 * 3600)

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
                return .replayed(try record.response)
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
        let age = max(age, Self.minimumIdempotencyRetention)
        let cutoff = Timestamp.milliseconds(Date()) - Int64(age.components.seconds) * 1000
        return try await write { db in
            try IdempotencyRecord.filter(IdempotencyRecord.Columns.createdAt < cutoff).deleteAll(db)
        }
    }
}
