import NIOCore
import PostgresNIO
import StockroomCore
import StockroomStorage

// What a PostgreSQL failure means to a write: gone, retryable, or the contract's error.

extension PostgresStore {
    /// Whether `error` means the connection can carry nothing more.
    static func isConnectionGone(_ error: any Error) -> Bool {
        guard let error = error as? PSQLError else { return false }
        if let state = error.serverInfo?[.sqlState] { return state.hasPrefix("57P") || state.hasPrefix("08") }
        return [.serverClosedConnection, .clientClosedConnection, .uncleanShutdown, .connectionError].contains(error.code)
    }

    static func sqlState(_ error: any Error) -> String? {
        (error as? PSQLError)?.serverInfo?[.sqlState]
    }

    /// A deadlock or serialization failure, or a state that changed under the write
    /// (`WriteRetry`): running the write again decides it.
    static func isRetryable(_ error: any Error) -> Bool {
        if error is WriteRetry { return true }
        guard let error = error as? PSQLError, let state = error.serverInfo?[.sqlState] else { return false }
        return state == "40001" || state == "40P01"
    }

    /// Storage failures (PostgreSQL unreachable, shutting down, out of space, read-only, a lock or
    /// statement timeout, the pool closed or its circuit breaker open) are `unavailable`; text with
    /// a NUL (which PostgreSQL cannot store) a validation failure; anything else is rethrown.
    static func mapped(_ error: any Error) -> any Error {
        if error is StoreError || error is DomainError || error is ReplayedResponse || error is ItemImportRolledBack { return error }
        if error is WriteRetry { return StoreError.unavailable("the write met concurrent changes \(attempts) times; retry it") }
        if let error = error as? PSQLError {
            if let state = error.serverInfo?[.sqlState] {
                if state == "22021" {
                    return StoreError.domain(.validationFailed(field: nil, message: "text must not contain U+0000"))
                }
                let unavailableClasses = ["08", "53", "57", "58"]
                if unavailableClasses.contains(String(state.prefix(2))) || ["25006", "55P03", "40001", "40P01", "23505"].contains(state) {
                    return StoreError.unavailable("PostgreSQL: \(error.serverInfo?[.message] ?? state) (\(state))")
                }
                return error
            }
            return StoreError.unavailable("PostgreSQL: \(String(reflecting: error.code))")
        }
        if error is CancellationError { return error }
        let type = String(reflecting: type(of: error))
        if type.contains("ConnectionPoolError") || type.contains("ChannelError") || type.contains("NIOConnectionError")
            || error is IOError
        {
            return StoreError.unavailable("PostgreSQL cannot be reached: \(error)")
        }
        return error
    }
}
