import StockroomWire
import Foundation
import GRDB
import StockroomCore

/// A row of `tokens`: a bearer token's identity, role and the hash of its secret (never the secret).
struct TokenRecord: Codable, FetchableRecord, PersistableRecord {
    static let databaseTableName = "tokens"

    var id: TokenID
    var user: UserID
    var role: Role
    var secretHash: Data
    var createdAt: Int64
    var revokedAt: Int64?

    enum CodingKeys: String, CodingKey, CaseIterable {
        case id, user, role
        case secretHash = "secret_hash"
        case createdAt = "created_at"
        case revokedAt = "revoked_at"
    }

    enum Columns {
        static let id = Column(CodingKeys.id)
        static let user = Column(CodingKeys.user)
        static let role = Column(CodingKeys.role)
        static let secretHash = Column(CodingKeys.secretHash)
        static let createdAt = Column(CodingKeys.createdAt)
        static let revokedAt = Column(CodingKeys.revokedAt)
    }

    /// A new token's row.
    init(info: TokenInfo, secretHash: Data) {
        id = info.id
        user = info.user
        role = info.role
        self.secretHash = secretHash
        createdAt = Timestamp.milliseconds(info.createdAt)
        revokedAt = info.revokedAt.map(Timestamp.milliseconds)
    }

    /// The token as listed: never its secret's hash.
    var info: TokenInfo {
        TokenInfo(
            id: id, user: user, role: role, createdAt: Timestamp.date(milliseconds: createdAt),
            revokedAt: revokedAt.map(Timestamp.date(milliseconds:)))
    }

    /// Every column, for the cached statements that read whole rows.
    static let selectSQL = "SELECT " + CodingKeys.allCases.map(\.rawValue).joined(separator: ", ") + " FROM tokens"
}

/// A role is stored as its name (`viewer`, `editor`, `admin`; the table's CHECK holds it to those).
extension Role: DatabaseValueConvertible {}
