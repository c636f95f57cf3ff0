import PostgresNIO

/// Why a PostgreSQL database cannot be used as it is (at open, not per request).
public enum PostgresStoreError: Error, CustomStringConvertible, Sendable {
    /// The schema is not one this stockroom reads (a newer migration, another change-value format).
    case schema(String)
    /// The `DB_URL` is not a PostgreSQL URL this stockroom can use.
    case url(String)
    /// A copy into the database cannot be made (it holds data already, the source's log is in
    /// another form).
    case copy(String)

    public var description: String {
        switch self {
        case .schema(let message): message
        case .url(let message): message
        case .copy(let message): message
        }
    }
}

extension PostgresStore {
    /// A readable reason for a failure to reach or use PostgreSQL: the server's own message and
    /// SQLSTATE, or what the connection ran into (postgres-nio's errors describe themselves only
    /// generically, so as not to leak queries into logs).
    public static func describe(_ error: any Error) -> String {
        if let error = error as? PSQLError {
            if let message = error.serverInfo?[.message] {
                return "\(message) (SQLSTATE \(error.serverInfo?[.sqlState] ?? "?"))"
            }
            if let underlying = error.underlying { return "\(error.code): \(underlying)" }
            return "\(error.code)"
        }
        return "\(error)"
    }
}
