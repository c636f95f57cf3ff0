/// Why a PostgreSQL database cannot be used as it is (at open, not per request).
public enum PostgresStoreError: Error, CustomStringConvertible, Sendable {
    /// The schema is not one this stockroom reads (a newer migration, another change-value format).
    case schema(String)
    /// The `DB_URL` is not a PostgreSQL URL this stockroom can use.
    case url(String)

    public var description: String {
        switch self {
        case .schema(let message): message
        case .url(let message): message
        }
    }
}
