import Foundation
import GRDB
import Synchronization
import StockroomCore
import StockroomWire

#if canImport(GRDBSQLite)
    import GRDBSQLite
#elseif canImport(SQLite3)
    import SQLite3
#endif

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
                state: try Self.decodedStates.state(of: state, clientID: clientID),
                version: version,
                updatedAt: Timestamp.date(milliseconds: updatedAt)
            )
        }
    }

    /// Decoded navigation states, by device: every command reads its device's state, which
    /// `JSONDecoder` would otherwise decode each time. An entry is a device's state with the JSON it
    /// was decoded from (or written as), and serves only that very JSON, so it is never stale, in
    /// any database of the process. Keyed by the device rather than by the JSON: a lookup hashes a
    /// short id, not the whole state, and a device's older states take no room. `saveClient` adds
    /// the state it writes.
    static let decodedStates = DecodedStates()

    final class DecodedStates: Sendable {
        private let states = Mutex<[ClientID: (json: String, state: NavigationState)]>([:])
        /// Entries kept (as many recently active devices); all are dropped past it.
        static let capacity = 1024

        func state(of json: String, clientID: ClientID) throws -> NavigationState {
            let kept = states.withLock { states -> NavigationState? in
                guard let entry = states[clientID], entry.json == json else { return nil }
                return entry.state
            }
            if let kept { return kept }
            let state = try JSONCoding.decoder().decode(NavigationState.self, from: Data(json.utf8))
            keep(state, json: json, clientID: clientID)
            return state
        }

        func keep(_ state: NavigationState, json: String, clientID: ClientID) {
            states.withLock { states in
                if states.count >= Self.capacity, states[clientID] == nil { states.removeAll(keepingCapacity: true) }
                states[clientID] = (json, state)
            }
        }
    }

    /// The owner's change seq of one client's row.
    static let ownerChangeSeqSQL = "SELECT \(CodingKeys.ownerChangeSeq.rawValue) FROM clients WHERE \(CodingKeys.clientID.rawValue) = ?"

    /// Inserts or replaces the row with one cached statement: GRDB's `upsert` encodes the record and
    /// builds its statement anew on each call.
    func upsertCached(_ db: Database) throws {
        try db.cachedStatement(sql: Self.upsertSQL).execute { binder in
            binder.bind(clientID)
            binder.bind(owner)
            binder.bind(state)
            binder.bind(version)
            binder.bind(updatedAt)
            binder.bind(ownerChangeSeq)
        }
    }

    private static let upsertSQL: String = {
        let columns = CodingKeys.allCases.map(\.rawValue)
        let updates = CodingKeys.allCases.filter { $0 != .clientID }.map { "\($0.rawValue) = excluded.\($0.rawValue)" }
        return "INSERT INTO clients (\(columns.joined(separator: ", "))) VALUES (\(columns.map { _ in "?" }.joined(separator: ", "))) "
            + "ON CONFLICT(\(CodingKeys.clientID.rawValue)) DO UPDATE SET \(updates.joined(separator: ", "))"
    }()

    static func find(_ db: Database, clientID: ClientID) throws -> ClientRecord? {
        // A cached statement, not the query interface (which prepares its statement anew), and its
        // row read in place, not decoded through `Decodable` and GRDB's `Row`: every command reads
        // its client first.
        try db.cachedStatement(sql: findSQL).readFirstRow(binding: { $0.bind(clientID) }) { row in
            ClientRecord(
                clientID: ClientID(stored: try SQLiteColumn.string(row, 0)), owner: try SQLiteColumn.string(row, 1),
                state: try SQLiteColumn.string(row, 2), version: Int(sqlite3_column_int64(row, 3)),
                updatedAt: sqlite3_column_int64(row, 4), ownerChangeSeq: sqlite3_column_int64(row, 5))
        }
    }

    private static let findSQL =
        "SELECT " + CodingKeys.allCases.map(\.rawValue).joined(separator: ", ") + " FROM clients WHERE \(Columns.clientID.name) = ?"
    /// How many clients a user has; for `checkNewClient`'s cached statement.
    static let countByOwnerSQL = "SELECT COUNT(*) FROM clients WHERE \(Columns.owner.name) = ?"
}
