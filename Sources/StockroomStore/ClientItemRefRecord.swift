import GRDB
import StockroomCore

/// A row of `client_item_refs`: deleting the item would change a client's navigation
/// (`NavigationState.repairableItemIDs`), so the delete repairs it.
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

    /// Replaces the references of `clientID` by `itemIDs`, whatever the table holds for it (a client
    /// whose stored state this write did not read). Cached statements, not the query interface
    /// (which prepares its statements anew on every call): every navigation write runs them.
    static func replace(_ db: Database, clientID: ClientID, with itemIDs: some Sequence<ItemID>) throws {
        try db.cachedStatement(sql: deleteSQL).execute { $0.bind(clientID) }
        try insert(db, clientID: clientID, itemIDs)
    }

    /// Changes the references of `clientID` from `old`, what its stored state names (and so what the
    /// table holds for it), to `new`: only the rows that differ, each by its primary key. With foreign
    /// keys on, SQLite deletes a child table's rows found through another index in two passes, through
    /// a temporary table it builds and zeroes for each statement; a delete by the primary key is one pass.
    static func update(_ db: Database, clientID: ClientID, from old: Set<ItemID>, to new: Set<ItemID>) throws {
        let gone = old.subtracting(new)
        if !gone.isEmpty {
            let delete = try db.cachedStatement(sql: deleteOneSQL)
            for id in gone {
                try delete.execute { binder in
                    binder.bind(id.description)
                    binder.bind(clientID)
                }
            }
        }
        try insert(db, clientID: clientID, new.subtracting(old))
    }

    private static func insert(_ db: Database, clientID: ClientID, _ itemIDs: some Sequence<ItemID>) throws {
        let insert = try db.cachedStatement(sql: insertSQL)
        for id in itemIDs {
            try insert.execute { binder in
                binder.bind(id.description)
                binder.bind(clientID)
            }
        }
    }

    static let deleteSQL = "DELETE FROM client_item_refs WHERE \(CodingKeys.clientID.rawValue) = ?"
    private static let deleteOneSQL =
        "DELETE FROM client_item_refs WHERE \(CodingKeys.itemID.rawValue) = ? AND \(CodingKeys.clientID.rawValue) = ?"
    /// `OR IGNORE`: a file written while an edit's or a duplicate's item was a reference too keeps
    /// those rows until the client's references are replaced (a delete then finds the client and its
    /// repair changes nothing), and the item may become a reference again meanwhile.
    private static let insertSQL =
        "INSERT OR IGNORE INTO client_item_refs (\(CodingKeys.itemID.rawValue), \(CodingKeys.clientID.rawValue)) VALUES (?, ?)"
}
