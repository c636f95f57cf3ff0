import GRDB
import StockroomCore

/// A row of `client_item_refs`: a client's navigation names an item, so deleting the item repairs it.
struct ClientItemRefRecord: Codable, FetchableRecord, PersistableRecord {
    static let databaseTableName = "client_item_refs"

    var itemID: String
    var clientID: ClientID

    enum CodingKeys: String, CodingKey {
        case itemID = "item_id"
        case clientID = "client_id"
    }

    enum Columns {
        static let itemID = Column(CodingKeys.itemID)
        static let clientID = Column(CodingKeys.clientID)
    }

    /// Replaces the references of `clientID` by `itemIDs`. Cached statements, not the query
    /// interface (which prepares its statements anew on every call): every navigation write runs them.
    static func replace(_ db: Database, clientID: ClientID, with itemIDs: some Sequence<ItemID>) throws {
        try db.cachedStatement(sql: deleteSQL).execute { $0.bind(clientID) }
        let insert = try db.cachedStatement(sql: insertSQL)
        for id in itemIDs {
            try insert.execute { binder in
                binder.bind(id.description)
                binder.bind(clientID)
            }
        }
    }

    static let deleteSQL = "DELETE FROM client_item_refs WHERE \(CodingKeys.clientID.rawValue) = ?"
    private static let insertSQL =
        "INSERT INTO client_item_refs (\(CodingKeys.itemID.rawValue), \(CodingKeys.clientID.rawValue)) VALUES (?, ?)"
}
