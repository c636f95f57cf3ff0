import Logging
import PostgresNIO
import StockroomStorage

extension PostgresStore {
    /// Runs `body` between `begin` and COMMIT on `connection`: every transaction of the store, the
    /// migrator and the commands. On a failure the transaction is rolled back, unless the
    /// connection itself is gone (the server ended the session, the socket closed): PostgreSQL has
    /// then rolled it back, and a ROLLBACK sent on such a connection can wait for ever (seen with a
    /// backend terminated mid-statement, through postgres-nio's `withTransaction`). A COMMIT that
    /// fails leaves the outcome unknown: `unavailable`, never a claim either way.
    /// `begin`: nil for a plain BEGIN. BEGIN and COMMIT are prepared statements (`Statements.Begin`,
    /// `Statements.Commit`), as a batch's others are: PostgreSQL parses neither for each batch.
    static func transaction<Value>(
        on connection: PostgresConnection, begin: PostgresQuery? = nil, logger: Logger,
        _ body: (PostgresConnection) async throws -> Value
    ) async throws -> Value {
        if let begin {
            try await connection.query(begin, logger: logger)
        } else {
            _ = try await connection.rows(Statements.Begin(), logger: logger)
        }
        let value: Value
        do {
            value = try await body(connection)
        } catch {
            if !connection.isClosed, !Self.isConnectionGone(error) {
                _ = try? await connection.query("ROLLBACK", logger: logger)
            }
            throw error
        }
        do {
            _ = try await connection.rows(Statements.Commit(), logger: logger)
        } catch {
            throw StoreError.unavailable(
                "the commit's outcome is unknown (PostgreSQL: \(Self.describe(error))); a retry with the same Idempotency-Key is safe")
        }
        return value
    }

    /// How many batches a write runs in before its retryable failure is answered (`unavailable`).
    /// A batch that runs it twice (without savepoints, then with them after one of its writes
    /// failed) counts once, so a write's batches are used up only by failures of its own.
    static let attempts = 5

    /// Runs `body` on a pooled connection outside any explicit transaction (each statement its own
    /// snapshot), mapping storage failures to `unavailable`; bounded by `answerBound`.
    func read<Value: Sendable>(_ body: @escaping @Sendable (PostgresConnection) async throws -> Value) async throws -> Value {
        do {
            return try await leased(bound: answerBound, body)
        } catch {
            throw Self.mapped(error)
        }
    }
}
