import GRDB
import StockroomCore

/// An identifier the store keeps as its text: the column holds `rawValue`, byte for byte, and a
/// value read back is taken as stored (the store only ever writes valid ones).
public protocol StoredAsText: DatabaseValueConvertible {
    /// The text the column holds.
    var rawValue: String { get }
    /// The identifier a column's text stands for; nil when it stands for none.
    init?(storedText: String)
}

extension StoredAsText {
    public var databaseValue: DatabaseValue { rawValue.databaseValue }

    public static func fromDatabaseValue(_ dbValue: DatabaseValue) -> Self? {
        String.fromDatabaseValue(dbValue).flatMap(Self.init(storedText:))
    }
}

extension ClientID: StoredAsText {
    public init?(storedText: String) { self.init(stored: storedText) }
}

extension TokenID: StoredAsText {
    public init?(storedText: String) { self.init(storedText) }
}

extension UserID: StoredAsText {
    public init?(storedText: String) { self.init(stored: storedText) }
}

/// Kept as `items` or `client:<clientID>`.
extension IdempotencyScope: StoredAsText {
    public init?(storedText: String) { self.init(rawValue: storedText) }
}
