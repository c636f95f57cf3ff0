import Foundation
import GRDB
import StockroomCore

/// A row of `clients`: one device's navigation state and its owner.
struct ClientRecord: Codable, FetchableRecord, PersistableRecord {
    static let databaseTableName = "clients"

    var clientID: ClientID
    var owner: String
    var state: String
    var version: Int
    var updatedAt: Int64
    var ownerChangeSeq: Int64

    enum CodingKeys: String, CodingKey, CaseIterable {
        case clientID = "client_id"
        case owner, state, version
        case updatedAt = "updated_at"
        case ownerChangeSeq = "owner_change_seq"
    }

    enum Columns {
        static let clientID = Column(CodingKeys.clientID)
        static let owner = Column(CodingKeys.owner)
        static let ownerChangeSeq = Column(CodingKeys.ownerChangeSeq)
    }

    /// The domain value of the row.
    var navigation: Navigation {
        get throws {
            Navigation(
                clientID: clientID,
                state: try JSONCoding.decoder().decode(NavigationState.self, from: Data(state.utf8)),
                version: version,
                updatedAt: Timestamp.date(milliseconds: updatedAt)
            )
        }
    }

    static func find(_ db: Database, clientID: ClientID) throws -> ClientRecord? {
        // A cached statement, not the query interface (which prepares its statement anew): every command reads its client first.
        try ClientRecord.fetchOne(db.cachedStatement(sql: findSQL), arguments: [clientID])
    }

    private static let findSQL =
        "SELECT " + CodingKeys.allCases.map(\.rawValue).joined(separator: ", ") + " FROM clients WHERE \(Columns.clientID.name) = ?"
    /// How many clients a user has; for `checkNewClient`'s cached statement.
    static let countByOwnerSQL = "SELECT COUNT(*) FROM clients WHERE \(Columns.owner.name) = ?"
}
