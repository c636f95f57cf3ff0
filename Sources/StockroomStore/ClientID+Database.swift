import GRDB
import StockroomCore

/// A client identifier is stored as its text; the store only ever writes valid ones.
extension ClientID: DatabaseValueConvertible {
    public var databaseValue: DatabaseValue { rawValue.databaseValue }

    public static func fromDatabaseValue(_ dbValue: DatabaseValue) -> ClientID? {
        String.fromDatabaseValue(dbValue).map(ClientID.init(stored:))
    }
}
