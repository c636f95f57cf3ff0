import GRDB
import StockroomCore

/// A client identifier is stored as its text; the store only ever writes valid ones.
extension ClientID: DatabaseValueConvertible {
    public var databaseValue: DatabaseValue { rawValue.databaseValue }

    public static func fromDatabaseValue(_ dbValue: DatabaseValue) -> ClientID? {
        String.fromDatabaseValue(dbValue).map(ClientID.init(stored:))
    }
}

/// A token identifier is stored as its text.
extension TokenID: DatabaseValueConvertible {
    public var databaseValue: DatabaseValue { rawValue.databaseValue }

    public static func fromDatabaseValue(_ dbValue: DatabaseValue) -> TokenID? {
        String.fromDatabaseValue(dbValue).map { TokenID($0) }
    }
}

/// A user is stored as its text, byte for byte.
extension UserID: DatabaseValueConvertible {
    public var databaseValue: DatabaseValue { rawValue.databaseValue }

    public static func fromDatabaseValue(_ dbValue: DatabaseValue) -> UserID? {
        String.fromDatabaseValue(dbValue).map(UserID.init(stored:))
    }
}

/// An idempotency scope is stored as `items` or `client:<clientID>`.
extension IdempotencyScope: DatabaseValueConvertible {
    public var databaseValue: DatabaseValue { rawValue.databaseValue }

    public static func fromDatabaseValue(_ dbValue: DatabaseValue) -> IdempotencyScope? {
        String.fromDatabaseValue(dbValue).flatMap(IdempotencyScope.init(rawValue:))
    }
}
